-- A conversation's tag (a department): set by the records that carry one
-- (Message.tag), the newest by (epoch, seq) in force. Retention policies
-- select by it, also after Redis expired the conversation, so it lives
-- apart from `history`, in a table no partition drop or row delete touches.
-- A replay inserts the same row again; ReplacingMergeTree folds it, and
-- readers take argMax by (epoch, seq) without waiting for merges.
CREATE TABLE IF NOT EXISTS conversation_tags (
    conv_id    String,
    epoch      UInt64,
    seq        UInt64,
    tag        String,
    write_time DateTime('UTC')
) ENGINE = ReplacingMergeTree(write_time)
ORDER BY (conv_id, epoch, seq);
