-- Wrapped data keys of sealed conversations (package seal), durable
-- outside Redis: every sealed record carries its conversation's key
-- (Sequenced.data_key), the history sink writes it here with the rows, and
-- a Redis that lost a key (or a rebuild from here) takes it back. Wrapped
-- by a master key, so safe at rest. keys rekey writes the rewrapped key with
-- a newer version; readers take argMax by version without waiting for
-- merges. No partition drop or row delete touches it.
CREATE TABLE IF NOT EXISTS data_keys (
    conv_id   String,
    master_id String,
    wrapped   String,
    version   UInt64
) ENGINE = ReplacingMergeTree(version)
ORDER BY conv_id;
