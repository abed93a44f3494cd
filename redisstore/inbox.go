package redisstore

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"strings"

	"github.com/redis/go-redis/v9"
)

var (
	//go:embed lua/apply_inboxes.lua
	applyInboxesLua    string
	applyInboxesScript = redis.NewScript(fenceLibLua + applyInboxesLua)
)

// ErrUserMoved: the user's keys live on the hot store now; route again.
var ErrUserMoved = errors.New("user moved to the hot store")

// InboxEventKind says what happened to one user at one seq.
type InboxEventKind byte

// Inbox event kinds (see lua/apply_inboxes.lua).
const (
	// InboxDelivered: a message or notice from someone else.
	InboxDelivered InboxEventKind = 'd'
	// InboxMentioned: delivered, and it mentions the user.
	InboxMentioned InboxEventKind = 'm'
	// InboxOwn: the user's own message; marks the conversation read up to it.
	InboxOwn InboxEventKind = 'o'
	// InboxJoined: the user joined at this seq and sees nothing up to it.
	InboxJoined InboxEventKind = 'j'
	// InboxLeftLarge: the user left a large group at this seq.
	InboxLeftLarge InboxEventKind = 'x'
	// InboxConvertLarge: the group became large; switch this member over.
	InboxConvertLarge InboxEventKind = 'c'
)

// InboxEvent is one event of an InboxUpdate.
type InboxEvent struct {
	Kind    InboxEventKind
	Seq     uint64
	WriteMS int64
}

// InboxUpdate is one merge batch of one conversation for one user: events in
// ascending seq order, all of one epoch.
type InboxUpdate struct {
	User string
	Conv string
	Form InboxForm
	// Epoch is the conversation epoch the seqs belong to. A batch of an
	// epoch older than the inbox's changes nothing; the first one of a
	// newer epoch takes back what the inbox counted above its first seq
	// (see lua/apply_inboxes.lua). 0: unknown, applied in the inbox's epoch.
	Epoch  uint64
	Events []InboxEvent
}

// InboxOutcome is what applying one update did.
type InboxOutcome int

// Outcomes of ApplyInboxes.
const (
	// InboxReplayed: every event was already applied; nothing changed.
	InboxReplayed InboxOutcome = iota
	// InboxApplied: the inbox changed.
	InboxApplied
	// InboxReceiveOnly: a receive-only account; nothing written.
	InboxReceiveOnly
)

// ApplyInboxes applies updates, many users' in one script call where
// their keys share a hash slot (any users on a standalone server, the
// users of one slot on Redis Cluster), at most Config.InboxesPerCall a
// call; each update is one atomic step, and all calls go in one round trip
// (per node on Redis Cluster). Replaying an update changes nothing. The
// outcome and error of update i are at index i.
func (s *Store) ApplyInboxes(ctx context.Context, updates []InboxUpdate) ([]InboxOutcome, []error) {
	outs, errs := make([]InboxOutcome, len(updates)), make([]error, len(updates))
	if len(updates) == 0 {
		return outs, errs
	}
	ctx, cancel := context.WithTimeout(ctx, s.cfg.CallTimeout)
	defer cancel()
	calls := s.inboxCalls(updates)
	cmds := s.pipelineInboxes(ctx, updates, calls)
	var lost [][]int
	var at []int
	for i, c := range cmds {
		if redis.HasErrorPrefix(c.Err(), "NOSCRIPT") {
			lost, at = append(lost, calls[i]), append(at, i)
		}
	}
	if len(lost) > 0 {
		// The server lost its script cache (restart, failover): those
		// calls changed nothing, so running them again is safe.
		if err := applyInboxesScript.Load(ctx, s.rdb).Err(); err != nil {
			for _, call := range lost {
				for _, i := range call {
					errs[i] = fmt.Errorf("inbox %s of %s: load script: %w", updates[i].Conv, updates[i].User, err)
				}
			}
			lost = nil
		}
		for k, c := range s.pipelineInboxes(ctx, updates, lost) {
			cmds[at[k]] = c
		}
	}
	for k, c := range cmds {
		inboxOutcomes(c, updates, calls[k], outs, errs)
	}
	return outs, errs
}

// inboxCalls cuts updates into script calls: the indexes of each call's
// updates, whose keys all share a hash slot.
func (s *Store) inboxCalls(updates []InboxUpdate) [][]int {
	_, cluster := s.rdb.(*redis.ClusterClient)
	bySlot := map[int]int{} // slot → index in calls of its open call
	var calls [][]int
	for i, u := range updates {
		slot := 0
		if cluster {
			slot = keyHashSlot(s.keys.Inbox(u.User))
		}
		k, ok := bySlot[slot]
		if !ok || len(calls[k]) == s.cfg.InboxesPerCall {
			k = len(calls)
			bySlot[slot] = k
			calls = append(calls, nil)
		}
		calls[k] = append(calls[k], i)
	}
	return calls
}

// keyHashSlot is the Redis Cluster slot of key: of its hash tag, the part
// between the first { and the next }, when that is not empty.
func keyHashSlot(key string) int {
	if open := strings.IndexByte(key, '{'); open >= 0 {
		if n := strings.IndexByte(key[open+1:], '}'); n > 0 {
			key = key[open+1 : open+1+n]
		}
	}
	return keySlot(key)
}

// pipelineInboxes sends the given calls in one pipeline.
func (s *Store) pipelineInboxes(ctx context.Context, updates []InboxUpdate, calls [][]int) []*redis.Cmd {
	cmds := make([]*redis.Cmd, len(calls))
	if len(calls) == 0 {
		return cmds
	}
	fence := s.fenceArg()
	// Errors are per command; Pipelined's own error is the first of them.
	_, _ = s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for k, call := range calls {
			keys := make([]string, 0, 5*len(call))
			var args []any
			for _, i := range call {
				keys = s.appendInboxKeys(keys, updates[i].User)
				args = appendInboxArgs(args, updates[i])
			}
			cmds[k] = applyInboxesScript.EvalSha(ctx, p, keys, append(args, fence)...)
		}
		return nil
	})
	return cmds
}

// Codes apply_inboxes.lua answers per update.
const (
	inboxCodeApplied     = 1
	inboxCodeReplayed    = 0
	inboxCodeReceiveOnly = -1
	inboxCodeMoved       = -2
)

// inboxOutcomes sets the outcome or error of every update of one call.
func inboxOutcomes(c *redis.Cmd, updates []InboxUpdate, call []int, outs []InboxOutcome, errs []error) {
	fail := func(err error) {
		for _, i := range call {
			if errs[i] == nil {
				errs[i] = fmt.Errorf("inbox %s of %s: %w", updates[i].Conv, updates[i].User, err)
			}
		}
	}
	codes, err := c.Int64Slice()
	switch {
	case err != nil:
		fail(fenced(err))
		return
	case len(codes) != len(call):
		fail(fmt.Errorf("inbox script answered %d codes for %d updates", len(codes), len(call)))
		return
	}
	for k, i := range call {
		u := updates[i]
		switch codes[k] {
		case inboxCodeApplied:
			outs[i] = InboxApplied
		case inboxCodeReplayed:
			outs[i] = InboxReplayed
		case inboxCodeReceiveOnly:
			outs[i] = InboxReceiveOnly
		case inboxCodeMoved:
			errs[i] = fmt.Errorf("inbox %s of %s: %w", u.Conv, u.User, ErrUserMoved)
		default:
			errs[i] = fmt.Errorf("inbox %s of %s: unknown code %d", u.Conv, u.User, codes[k])
		}
	}
}

func (s *Store) appendInboxKeys(keys []string, user string) []string {
	k := s.keys
	return append(keys, k.Inbox(user), k.ConvList(user), k.Mentions(user), k.Profile(user),
		k.MentionIndex(user))
}

func appendInboxArgs(args []any, u InboxUpdate) []any {
	evs := sentEvents(u.Events)
	args = append(args, u.Conv, string(rune(u.Form)), u.Epoch, len(evs))
	for _, e := range evs {
		args = append(args, string(rune(e.Kind)), e.Seq, e.WriteMS)
	}
	return args
}

// sentEvents are the events the script needs to apply evs: a delivery
// only raises C:l to its seq and lists the conversation at its write time,
// so of a run of deliveries (ascending) the last one does what the run
// does. The first event with a seq stays: the script takes an epoch's
// first seq from it. A merge batch of 20 messages to a member of a group is then sent as
// 2 events, not 20.
func sentEvents(evs []InboxEvent) []InboxEvent {
	out := make([]InboxEvent, 0, min(len(evs), 4))
	seq := false // an event with a seq was kept
	for i, e := range evs {
		if seq && i+1 < len(evs) && e.Kind == InboxDelivered && evs[i+1].Kind == InboxDelivered {
			continue
		}
		out = append(out, e)
		seq = seq || e.Seq > 0
	}
	return out
}
