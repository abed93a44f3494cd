-- One row per sequenced message (and membership notice) of a conversation:
-- the full history behind the 30-day Redis window, for roaming and analysts.
--
-- A replayed Kafka record inserts the same (conv_id, seq) again.
-- ReplacingMergeTree folds such copies when parts of one partition merge,
-- keeping the one with the latest write_time; readers must not wait for that
-- and collapse by (conv_id, seq) themselves (`LIMIT 1 BY conv_id, seq`, see
-- README.md), which also covers copies that landed in different months.
--
-- Times are DateTime('UTC') so toYYYYMM, and therefore which partition a row
-- lands in and when retention drops it, does not depend on the server's time
-- zone. The *_ms columns keep the exact milliseconds. Types are limited to
-- what ClickHouse 18.16 knows (no DateTime64, LowCardinality or TTL).
--
-- Every field of the Message is a column (qos too, though only stored QoS
-- values reach the table): a Redis timeline rebuilt from these rows must
-- encode byte for byte as sequencing wrote it.
CREATE TABLE IF NOT EXISTS messages (
    conv_id       String,
    seq           UInt64,
    epoch         UInt64,
    conv_type     Enum8('unspecified' = 0, 'direct' = 1, 'group' = 2),
    kind          Enum8('unspecified' = 0, 'message' = 1, 'member_join' = 2, 'member_leave' = 3),
    sender        String,
    recipients    Array(String),
    mentions      Array(String),
    mention_all   UInt8,
    qos           Enum8('unspecified' = 0, 'at_most_once' = 1, 'at_least_once' = 2),
    content_type  String,
    client_msg_id String,
    body          String,
    send_time     DateTime('UTC'),
    send_time_ms  Int64,
    write_time    DateTime('UTC'),
    write_time_ms Int64
) ENGINE = ReplacingMergeTree(write_time)
PARTITION BY toYYYYMM(write_time)
ORDER BY (conv_id, seq);
