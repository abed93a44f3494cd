// Package retention is the one home of retention policies: how long a
// message stays in the Redis inbox window and in ClickHouse history, chosen
// by configuration per conversation, conversation prefix, conversation tag
// (a department), conversation type and content type or kind.
//
// A policy file (YAML, see Parse) is validated whole at start and on every
// reload; its errors name the line. A Set resolves one message (Resolve) or
// compiles to the redisstore.Retention of one conversation (Inbox), which is
// what the expiry worker applies to Redis; ClickHouse history is trimmed by
// Resolve's Kept per group of rows. Source holds the current Set of a file
// and swaps it on SIGHUP or when the file changes.
//
// Choosing a policy. Every policy whose selectors all match a message is a
// candidate. Candidates are ordered by specificity, compared field by field:
//
//  1. the message selector: content_type, then kind, then none;
//  2. conv (an exact conversation id) before conv_prefix;
//  3. a longer conv_prefix before a shorter one;
//  4. tag before no tag;
//  5. conv_type before no conv_type.
//
// Each setting (inbox, history) comes from the most specific candidate
// that sets it, else from defaults. Two candidates can only be equally
// specific when their selectors are identical, and a file with two such
// policies is refused, so there are no ties. audit_hold is not chosen: the
// longest hold of every candidate is a floor under the history retention
// (it outlasts even history: none).
//
// history: none burns a message on expiry: it is deleted from history when
// it leaves the inbox window. History is still written until then, so a
// Redis that loses its data can be rebuilt from it.
package retention
