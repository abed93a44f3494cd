package redisstore

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/redis/go-redis/v9"
)

// The plumbing every script of the store runs through: pipelined runs
// that survive a server's lost script cache, the refusals the scripts
// answer with, and the readers of their replies.

// Refusals: a script that changes nothing and fails answers an error
// reply starting with one of these words (the scripts spell them the
// same way; lua_conventions_test.go checks).
const (
	// refusalMoved: the user's keys moved to the hot store (ErrUserMoved).
	refusalMoved = "OBMOVED"
	// refusalFenced: the server instance is not verified (ErrFenced).
	refusalFenced = "OBFENCED"
	// refusalDedupe: a dedupe day changed since the caller read it; read
	// again.
	refusalDedupe = "OBDEDUPE"
	// refusalDevices: the device set changed since the caller read it;
	// read again.
	refusalDevices = "OBDEVICES"
	// refusalHeld: the conversation is held for a rebuild (Keys.Held).
	// Permanent: it stays refused until an operator rebuilds it.
	refusalHeld = "OBHELD"
	// refusalLiveDevices: the user has as many devices connected as they
	// may (ErrTooManyDevices).
	refusalLiveDevices = "OBLIVEDEVICES"
	// RefusalUnindexed: the user's list indexes are not complete yet.
	RefusalUnindexed = "OBINDEX"
	// noScript is the server's answer to EVALSHA of a script it does not
	// hold (a restart, a failover, SCRIPT FLUSH).
	noScript = "NOSCRIPT"
)

// Status codes of the scripts' replies. Each script names its codes as
// locals at its top, spelled as here without the prefix (STATUS_NEW for
// seqStatusNew); lua_conventions_test.go checks that they agree.
const (
	// sequence.lua, per record.
	seqStatusNew       = 0
	seqStatusDuplicate = 1
	seqStatusRejected  = 2
	seqStatusNotDone   = 3

	// apply_inboxes.lua, per update.
	inboxStatusReplayed    = 0
	inboxStatusApplied     = 1
	inboxStatusReceiveOnly = -1
	inboxStatusMoved       = -2

	// receipts_ack.lua.
	receiptsAckStatusRefused = 0
	receiptsAckStatusRaised  = 1

	// ack_cursor_raise.lua.
	ackRaiseStatusRaised       = 0
	ackRaiseStatusUnregistered = 1
	ackRaiseStatusMoved        = 2
)

// scriptCall is one run of a script within a pipeline.
type scriptCall struct {
	keys []string
	args []any
	// script, when set, is run instead of the pipeline's, so that calls of
	// two scripts share one round trip.
	script *redis.Script
}

// scriptOf is the script c runs in a pipeline of sc.
func (c scriptCall) scriptOf(sc *redis.Script) *redis.Script {
	if c.script != nil {
		return c.script
	}
	return sc
}

// evalPiped runs one script many times in one pipeline. A Cluster client
// splits the pipeline per node, so the calls may touch different slots as
// long as each call stays in one. A call that met a server without the
// script (NOSCRIPT) did nothing: the script is loaded and those calls are
// sent again. The error is the first call's that failed; each call's own
// is in its Cmd.
func (s *Store) evalPiped(ctx context.Context, sc *redis.Script, calls []scriptCall) ([]*redis.Cmd, error) {
	if len(calls) == 0 {
		return nil, nil
	}
	cmds := s.pipelineScript(ctx, sc, calls)
	var lost []scriptCall
	var at []int
	for i := range cmds {
		if anyNoScript(cmds[i : i+1]) {
			lost, at = append(lost, calls[i]), append(at, i)
		}
	}
	if len(lost) > 0 {
		loaded := map[*redis.Script]bool{}
		for _, c := range lost {
			if l := c.scriptOf(sc); !loaded[l] {
				loaded[l] = true
				if err := l.Load(ctx, s.rdb).Err(); err != nil {
					return cmds, fmt.Errorf("load script: %w", err)
				}
			}
		}
		for k, c := range s.pipelineScript(ctx, sc, lost) {
			cmds[at[k]] = c
		}
	}
	for _, c := range cmds {
		if err := c.Err(); err != nil {
			return cmds, err
		}
	}
	return cmds, nil
}

// pipelineScript sends calls in one pipeline; errors are per command.
func (s *Store) pipelineScript(ctx context.Context, sc *redis.Script, calls []scriptCall) []*redis.Cmd {
	cmds := make([]*redis.Cmd, len(calls))
	_, _ = s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, c := range calls {
			cmds[i] = c.scriptOf(sc).EvalSha(ctx, p, c.keys, c.args...)
		}
		return nil
	})
	return cmds
}

// AsUserMoved turns a script's OBMOVED answer into ErrUserMoved, so the
// caller routes the user again (see InboxRouter).
func AsUserMoved(err error) error {
	if redis.HasErrorPrefix(err, refusalMoved) {
		return ErrUserMoved
	}
	return err
}

// anyUserMoved reports whether any call of a pipeline answered OBMOVED.
func anyUserMoved(cmds []*redis.Cmd) bool {
	for _, c := range cmds {
		if c != nil && redis.HasErrorPrefix(c.Err(), refusalMoved) {
			return true
		}
	}
	return false
}

// fenced maps a script's OBFENCED refusal to ErrFenced.
func fenced(err error) error {
	if redis.HasErrorPrefix(err, refusalFenced) {
		return fmt.Errorf("%w: %s", ErrFenced, strings.TrimPrefix(err.Error(), refusalFenced+" "))
	}
	return err
}

// readReplyUint reads an integer or decimal string of a script reply (0
// when absent, negative or malformed).
func readReplyUint(v any) uint64 {
	switch x := v.(type) {
	case int64:
		if x < 0 {
			return 0
		}
		return uint64(x)
	case string:
		n, _ := strconv.ParseUint(x, 10, 64)
		return n
	}
	return 0
}

// readReplyString reads a bulk string (or an integer) of a script reply.
func readReplyString(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case int64:
		return strconv.FormatInt(x, 10)
	}
	return ""
}

// ReplyUint and ReplyString are the reply readers for the stages built
// on the store (redisstore/readpath), the same the store's own calls use.
func ReplyUint(v any) uint64 { return readReplyUint(v) }

// ReplyString: see ReplyUint.
func ReplyString(v any) string { return readReplyString(v) }

// ScriptCall is one run of a script within EvalPiped's pipeline.
type ScriptCall struct {
	Keys []string
	Args []any
}

// EvalPiped runs one script many times in one pipeline, surviving a lost
// script cache as the store's own calls do (evalPiped), for the stages
// built on the store.
func (s *Store) EvalPiped(ctx context.Context, sc *redis.Script, calls []ScriptCall) ([]*redis.Cmd, error) {
	in := make([]scriptCall, len(calls))
	for i, c := range calls {
		in[i] = scriptCall{keys: c.Keys, args: c.Args}
	}
	return s.evalPiped(ctx, sc, in)
}

// anyNoScript reports whether any call of a pipeline met a server without
// its script (for pipelines of more than one script; see evalPiped).
func anyNoScript(cmds []*redis.Cmd) bool {
	for _, c := range cmds {
		if c != nil && redis.HasErrorPrefix(c.Err(), noScript) {
			return true
		}
	}
	return false
}
