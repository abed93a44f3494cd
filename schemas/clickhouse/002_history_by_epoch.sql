-- The epoch joins the key. 001's `messages` collapsed rows by
-- (conv_id, seq), but a conversation rebuilt after a Redis loss starts a new
-- epoch whose seqs repeat numbers the old epoch used for other messages: a
-- merge would keep one of the two and a read would hide the other. `history`
-- is the same table keyed by (conv_id, epoch, seq); `messages` becomes a view
-- of it, so analysts' queries keep running.
--
-- Every statement is safe to run again and from several processes at once
-- (a crash before the version is recorded runs the file again): rows only
-- ever move from the old table into `history`, copies of one
-- (conv_id, epoch, seq) fold like any replay, and the old table is dropped
-- only after its rows were copied. On a database that already ran this file
-- the first statement finds the view, the copy reads `history` through it
-- (copies that fold) and the view is made again.
--
-- Stop history writers of the previous version before migrating: a row one
-- of them writes into the old table after the copy is dropped with it.
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

CREATE TABLE IF NOT EXISTS history (
    conv_id       String,
    epoch         UInt64,
    seq           UInt64,
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
ORDER BY (conv_id, epoch, seq);

INSERT INTO history (conv_id, epoch, seq, conv_type, kind, sender, recipients, mentions,
    mention_all, qos, content_type, client_msg_id, body, send_time, send_time_ms, write_time, write_time_ms)
SELECT conv_id, epoch, seq, conv_type, kind, sender, recipients, mentions,
    mention_all, qos, content_type, client_msg_id, body, send_time, send_time_ms, write_time, write_time_ms
FROM messages;

DROP TABLE IF EXISTS messages;

CREATE VIEW IF NOT EXISTS messages AS
SELECT conv_id, seq, epoch, conv_type, kind, sender, recipients, mentions,
    mention_all, qos, content_type, client_msg_id, body, send_time, send_time_ms, write_time, write_time_ms
FROM history;

-- Where each epoch came from: a rebuild that starts epoch `epoch` at
-- counter `base` from the history of epoch `parent` records it here before
-- it commits, so the new epoch's seqs 1..base are the parent's (as the
-- parent's own lineage resolves them) and only seqs above base are its
-- own rows. An epoch without a row is a root: every seq of it is its own.
CREATE TABLE IF NOT EXISTS epochs (
    conv_id    String,
    epoch      UInt64,
    parent     UInt64,
    base       UInt64,
    created_at DateTime('UTC')
) ENGINE = ReplacingMergeTree(created_at)
ORDER BY (conv_id, epoch);

-- Epochs started by rebuilds before this migration left no record: infer
-- each from the data, as the epoch's lowest seq minus one on top of the
-- conversation's previous epoch. Running it again yields the same rows.
INSERT INTO epochs (conv_id, epoch, parent, base, created_at)
SELECT conv_id, e.1, e.2, e.3, toDateTime(0, 'UTC')
FROM
(
    SELECT conv_id, arraySort(groupArray((epoch, lo))) AS el
    FROM (SELECT conv_id, epoch, min(seq) AS lo FROM history GROUP BY conv_id, epoch)
    GROUP BY conv_id
)
ARRAY JOIN arrayMap(i -> (el[i].1, el[i - 1].1, el[i].2 - 1),
    arrayFilter(i -> i > 1 AND el[i].2 > 1, arrayEnumerate(el))) AS e;
