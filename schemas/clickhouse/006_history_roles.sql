-- A join's role and a record's authority, which a rebuild from here needs
-- to give a group back its admins and the owners joins handed over to: the
-- sequencing step keeps them in Redis only (lua/sequence.lua), and
-- without them a rebuilt group had its founder as owner and nobody else
-- who may add or remove members. Rows written before this file read as
-- 'unspecified' and 'sender' (see DESIGN, "Roles live beside the members",
-- for what a rebuild of such rows gives). Run again, each column is found
-- there (chstore: columnExists).
ALTER TABLE history ADD COLUMN role Enum8('unspecified' = 0, 'member' = 1, 'admin' = 2, 'owner' = 3) DEFAULT 'unspecified';
ALTER TABLE history ADD COLUMN authority Enum8('sender' = 0, 'system' = 1) DEFAULT 'sender';
