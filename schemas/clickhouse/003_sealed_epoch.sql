-- Sealed bodies (package seal): a row whose body is sealed keeps the epoch
-- it was sealed in, which with its seq names the nonce; 0 is a body in the
-- clear. A rebuild moves rows' bodies into newer epochs unchanged, so the
-- row's own epoch is not enough. Analysts' SQL sees sealed bodies as
-- ciphertext. Run again, the column is found there (chstore: columnExists).
ALTER TABLE history ADD COLUMN sealed_epoch UInt64 DEFAULT 0
