package redisstore

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"slices"
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
//
// An update that fails for good (Permanent: a key of the wrong type, a
// script error) fails alone: the script reports each update's error in its
// place. A call that failed whole for good (a malformed reply, an error
// outside any update) is sent again once, one update a call, in one more
// round trip, so that its bad update does not fail its neighbours; what
// those calls answer is final.
func (s *Store) ApplyInboxes(ctx context.Context, updates []InboxUpdate) ([]InboxOutcome, []error) {
	outs, errs := make([]InboxOutcome, len(updates)), make([]error, len(updates))
	if len(updates) == 0 {
		return outs, errs
	}
	groups := s.inboxCalls(updates)
	failed := s.applyInboxCalls(ctx, updates, groups, outs, errs)
	var alone [][]int
	for _, k := range failed {
		for _, i := range groups[k] {
			alone = append(alone, []int{i})
			errs[i] = nil
		}
	}
	if len(alone) > 0 {
		s.applyInboxCalls(ctx, updates, alone, outs, errs)
	}
	return outs, errs
}

// applyInboxCalls runs the script calls of groups in one pipeline and sets
// the outcome or error of each of their updates. It returns the calls of
// more than one update that failed whole for good.
func (s *Store) applyInboxCalls(ctx context.Context, updates []InboxUpdate, groups [][]int,
	outs []InboxOutcome, errs []error) (failed []int) {
	ctx, cancel := context.WithTimeout(ctx, s.cfg.CallTimeout)
	defer cancel()
	calls := make([]scriptCall, len(groups))
	fence := s.fenceArg()
	for k, g := range groups {
		calls[k] = s.inboxCall(updates, g, fence)
	}
	// Each call's codes are its updates' own; the pipeline's error adds
	// only why a lost script could not be loaded again.
	cmds, err := s.evalPiped(ctx, applyInboxesScript, calls)
	for k, c := range cmds {
		if anyNoScript(cmds[k:k+1]) && err != nil {
			for _, i := range groups[k] {
				errs[i] = fmt.Errorf("inbox %s of %s: %w", updates[i].Conv, updates[i].User, err)
			}
			continue
		}
		if whole := inboxOutcomes(c, updates, groups[k], outs, errs); Permanent(whole) && len(groups[k]) > 1 {
			failed = append(failed, k)
		}
	}
	return failed
}

// inboxCalls cuts updates into script calls: the indexes of each call's
// updates, whose keys all share a hash slot.
func (s *Store) inboxCalls(updates []InboxUpdate) [][]int {
	return s.slotCalls(len(updates), s.cfg.InboxesPerCall, nil, func(i int) string { return s.keys.Inbox(updates[i].User) })
}

// slotCalls cuts items 0..n-1 into script calls whose keys all share a
// hash slot, as a script's keys must on Redis Cluster: on a standalone
// server any items go together, on a Cluster the items of one slot
// (slotKey(i) is a key of item i; each item's keys share its tag). A call
// closes once its items weigh per (weight nil: 1 each); an item heavier
// than that has a call of its own. The calls hold the items in order.
func (s *Store) slotCalls(n, per int, weight func(i int) int, slotKey func(i int) string) [][]int {
	_, cluster := s.rdb.(*redis.ClusterClient)
	type open struct{ call, weight int }
	bySlot := map[int]open{} // slot → its open call
	var calls [][]int
	for i := range n {
		slot := 0
		if cluster {
			slot = keyHashSlot(slotKey(i))
		}
		w := 1
		if weight != nil {
			w = max(1, weight(i))
		}
		o, ok := bySlot[slot]
		if !ok || o.weight+w > per && o.weight > 0 {
			o = open{call: len(calls)}
			calls = append(calls, nil)
		}
		calls[o.call] = append(calls[o.call], i)
		o.weight += w
		bySlot[slot] = o
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

// inboxOutcomes sets the outcome or error of every update of one call; it
// returns the error that failed the call whole, if one did.
func inboxOutcomes(c *redis.Cmd, updates []InboxUpdate, call []int, outs []InboxOutcome, errs []error) error {
	fail := func(err error) error {
		for _, i := range call {
			if errs[i] == nil {
				errs[i] = fmt.Errorf("inbox %s of %s: %w", updates[i].Conv, updates[i].User, err)
			}
		}
		return err
	}
	switch err := c.Err(); {
	case errors.Is(err, redis.Nil):
		return fail(fmt.Errorf("%w: nil", ErrMalformedReply))
	case err != nil:
		return fail(fenced(err))
	}
	replies, err := c.Slice()
	switch {
	case err != nil:
		return fail(fmt.Errorf("%w: %v", ErrMalformedReply, err))
	case len(replies) != len(call):
		return fail(fmt.Errorf("%w: %d replies for %d updates", ErrMalformedReply, len(replies), len(call)))
	}
	for k, i := range call {
		u := updates[i]
		code, isCode := replies[k].(int64)
		var err error
		switch failure, isErr := replies[k].(error); {
		case isErr:
			err = fenced(failure)
		case !isCode:
			err = fmt.Errorf("%w: %T in place of a code", ErrMalformedReply, replies[k])
		case code == inboxStatusApplied:
			outs[i] = InboxApplied
		case code == inboxStatusReplayed:
			outs[i] = InboxReplayed
		case code == inboxStatusReceiveOnly:
			outs[i] = InboxReceiveOnly
		case code == inboxStatusMoved:
			err = ErrUserMoved
		default:
			err = fmt.Errorf("%w: unknown code %d", ErrMalformedReply, code)
		}
		if err != nil {
			errs[i] = fmt.Errorf("inbox %s of %s: %w", u.Conv, u.User, err)
		}
	}
	return nil
}

func (s *Store) appendInboxKeys(keys []string, user string) []string {
	k := s.keys
	return append(keys, k.Inbox(user), k.ConvList(user), k.Mentions(user), k.Profile(user),
		k.MentionIndex(user))
}

// inboxCall is the script call of the updates at call: their keys, their
// distinct plans (conversation, form, epoch and the events sent) once
// each, then each update's plan number (see lua/apply_inboxes.lua).
func (s *Store) inboxCall(updates []InboxUpdate, call []int, fence string) scriptCall {
	keys := make([]string, 0, 5*len(call))
	var plans []InboxUpdate // one update of each plan, its events as sent
	refs := make([]any, len(call))
	for n, i := range call {
		u := updates[i]
		keys = s.appendInboxKeys(keys, u.User)
		u.Events = sentEvents(u.Events)
		p := slices.IndexFunc(plans, func(q InboxUpdate) bool { return samePlan(q, u) })
		if p < 0 {
			p = len(plans)
			plans = append(plans, u)
		}
		refs[n] = p + 1
	}
	size := 1 + len(refs) + 1
	for _, p := range plans {
		size += 4 + 3*len(p.Events)
	}
	args := make([]any, 0, size)
	args = append(args, len(plans))
	for _, p := range plans {
		args = append(args, p.Conv, string(rune(p.Form)), p.Epoch, len(p.Events))
		for _, e := range p.Events {
			args = append(args, string(rune(e.Kind)), e.Seq, e.WriteMS)
		}
	}
	args = append(append(args, refs...), fence)
	return scriptCall{keys: keys, args: args}
}

// samePlan reports whether a and b write the same to their users' inboxes.
func samePlan(a, b InboxUpdate) bool {
	return a.Conv == b.Conv && a.Form == b.Form && a.Epoch == b.Epoch && slices.Equal(a.Events, b.Events)
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
