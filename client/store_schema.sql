-- The device's local database (SQLite). A message is held once: by its
-- position (conv_id, epoch, seq) and by its identity (conv_id,
-- client_msg_id). A cursor moves in the same transaction as the messages
-- that justify it, and the server is acked only after that committed.
CREATE TABLE IF NOT EXISTS messages (
  conv_id       TEXT    NOT NULL,
  epoch         INTEGER NOT NULL,
  seq           INTEGER NOT NULL,
  client_msg_id TEXT    NOT NULL,
  sender        TEXT    NOT NULL,
  kind          TEXT    NOT NULL,
  conv_type     TEXT    NOT NULL DEFAULT '',
  content_type  TEXT    NOT NULL DEFAULT '',
  body          BLOB,
  mentions      TEXT    NOT NULL DEFAULT '',
  mention_all   INTEGER NOT NULL DEFAULT 0,
  write_time_ms INTEGER NOT NULL DEFAULT 0,
  send_time_ms  INTEGER NOT NULL DEFAULT 0,
  UNIQUE (conv_id, epoch, seq),
  UNIQUE (conv_id, client_msg_id)
);

-- cursor: every seq up to it is held or recorded in gaps; what sync
-- continues from. acked: the highest cursor the server confirmed.
CREATE TABLE IF NOT EXISTS cursors (
  conv_id TEXT PRIMARY KEY,
  epoch   INTEGER NOT NULL,
  seq     INTEGER NOT NULL,
  acked   INTEGER NOT NULL DEFAULT 0
);

-- Ranges below a cursor the server said exist and the device lacks
-- (inclusive), to page through.
CREATE TABLE IF NOT EXISTS gaps (
  conv_id  TEXT    NOT NULL,
  epoch    INTEGER NOT NULL,
  from_seq INTEGER NOT NULL,
  to_seq   INTEGER NOT NULL,
  PRIMARY KEY (conv_id, epoch, from_seq)
);

-- Outgoing messages until the server accepted them and they came back
-- with their seq. A retry sends the same client_msg_id.
CREATE TABLE IF NOT EXISTS sending (
  client_msg_id TEXT PRIMARY KEY,
  conv_id       TEXT    NOT NULL,
  request       BLOB    NOT NULL,
  created_ms    INTEGER NOT NULL,
  attempts      INTEGER NOT NULL DEFAULT 0,
  accepted_ms   INTEGER NOT NULL DEFAULT 0,
  last_error    TEXT    NOT NULL DEFAULT ''
);

-- Outgoing messages the pipeline refused for good (they left sending):
-- the request as it was, and why.
CREATE TABLE IF NOT EXISTS rejected (
  client_msg_id TEXT PRIMARY KEY,
  conv_id       TEXT    NOT NULL,
  request       BLOB    NOT NULL,
  reason        TEXT    NOT NULL,
  at_ms         INTEGER NOT NULL,
  code          TEXT    NOT NULL DEFAULT ''
);

-- The conversation list as last read from the server.
CREATE TABLE IF NOT EXISTS conversations (
  conv_id        TEXT PRIMARY KEY,
  kind           TEXT    NOT NULL DEFAULT '',
  large          INTEGER NOT NULL DEFAULT 0,
  unread         INTEGER NOT NULL DEFAULT 0,
  last_seq       INTEGER NOT NULL DEFAULT 0,
  read_seq       INTEGER NOT NULL DEFAULT 0,
  acked_seq      INTEGER NOT NULL DEFAULT 0,
  mentions       INTEGER NOT NULL DEFAULT 0,
  last_active_ms INTEGER NOT NULL DEFAULT 0,
  preview_seq    INTEGER NOT NULL DEFAULT 0,
  preview_sender TEXT    NOT NULL DEFAULT '',
  preview_text   TEXT    NOT NULL DEFAULT ''
);
CREATE INDEX IF NOT EXISTS conversations_by_activity ON conversations (last_active_ms DESC, conv_id);
