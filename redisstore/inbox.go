package redisstore

import (
	"context"
	_ "embed"
	"errors"
	"fmt"

	"github.com/redis/go-redis/v9"
)

var (
	//go:embed lua/apply_inbox.lua
	applyInboxLua    string
	applyInboxScript = redis.NewScript(fenceLibLua + applyInboxLua)
)

// ErrUserMoved: the user's keys live on the hot store now; route again.
var ErrUserMoved = errors.New("user moved to the hot store")

// InboxEventKind says what happened to one user at one seq.
type InboxEventKind byte

// Inbox event kinds (see lua/apply_inbox.lua).
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

// InboxForm is how a conversation is kept in a user's inbox (the `C:t`
// field of schemas/redis-keys.md).
type InboxForm byte

// Inbox forms.
const (
	InboxDirect InboxForm = 'd'
	InboxGroup  InboxForm = 'g'
	// InboxLarge: unread and order are derived at read time.
	InboxLarge InboxForm = 'L'
)

// InboxUpdate is one merge batch of one conversation for one user: events in
// ascending seq order, all of one epoch.
type InboxUpdate struct {
	User string
	Conv string
	Form InboxForm
	// Epoch is the conversation epoch the seqs belong to. A batch of an
	// epoch older than the inbox's changes nothing; the first one of a
	// newer epoch takes back what the inbox counted above its first seq
	// (see lua/apply_inbox.lua). 0: unknown, applied in the inbox's epoch.
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

// ApplyInboxes applies updates, each to its user's inbox in one atomic
// script call, pipelined in one round trip (per node on Redis Cluster).
// Replaying an update changes nothing. The outcome and error of update i
// are at index i; err is set when the round trip itself failed.
func (s *Store) ApplyInboxes(ctx context.Context, updates []InboxUpdate) ([]InboxOutcome, []error) {
	outs, errs := make([]InboxOutcome, len(updates)), make([]error, len(updates))
	if len(updates) == 0 {
		return outs, errs
	}
	ctx, cancel := context.WithTimeout(ctx, s.cfg.CallTimeout)
	defer cancel()
	cmds := s.pipelineInboxes(ctx, updates, nil)
	var lost []int
	for i, c := range cmds {
		if redis.HasErrorPrefix(c.Err(), "NOSCRIPT") {
			lost = append(lost, i)
		}
	}
	if len(lost) > 0 {
		// The server lost its script cache (restart, failover): those
		// updates were not applied, so running them again is safe.
		if err := applyInboxScript.Load(ctx, s.rdb).Err(); err != nil {
			for _, i := range lost {
				errs[i] = fmt.Errorf("inbox %s of %s: load script: %w", updates[i].Conv, updates[i].User, err)
			}
			lost = nil
		}
		again := s.pipelineInboxes(ctx, updates, lost)
		for k, i := range lost {
			cmds[i] = again[k]
		}
	}
	for i, c := range cmds {
		if errs[i] == nil {
			outs[i], errs[i] = inboxOutcome(c, updates[i])
		}
	}
	return outs, errs
}

// pipelineInboxes sends the updates at the given indexes (all when nil) in
// one pipeline.
func (s *Store) pipelineInboxes(ctx context.Context, updates []InboxUpdate, only []int) []*redis.Cmd {
	if only == nil {
		only = make([]int, len(updates))
		for i := range only {
			only[i] = i
		}
	}
	cmds := make([]*redis.Cmd, len(only))
	if len(only) == 0 {
		return cmds
	}
	// Errors are per command; Pipelined's own error is the first of them.
	_, _ = s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for k, i := range only {
			u := updates[i]
			cmds[k] = applyInboxScript.EvalSha(ctx, p, s.inboxKeys(u.User), append(inboxArgs(u), s.fenceArg())...)
		}
		return nil
	})
	return cmds
}

func inboxOutcome(c *redis.Cmd, u InboxUpdate) (InboxOutcome, error) {
	err := c.Err()
	if redis.HasErrorPrefix(err, "OBMOVED") {
		return 0, fmt.Errorf("inbox %s of %s: %w", u.Conv, u.User, ErrUserMoved)
	}
	if err != nil {
		return 0, fmt.Errorf("inbox %s of %s: %w", u.Conv, u.User, fenced(err))
	}
	n, err := c.Int()
	if err != nil {
		return 0, fmt.Errorf("inbox %s of %s: %w", u.Conv, u.User, err)
	}
	switch n {
	case 1:
		return InboxApplied, nil
	case -1:
		return InboxReceiveOnly, nil
	}
	return InboxReplayed, nil
}

func (s *Store) inboxKeys(user string) []string {
	k := s.keys
	return []string{k.Inbox(user), k.ConvList(user), k.Mentions(user), k.Profile(user),
		k.MentionIndex(user)}
}

func inboxArgs(u InboxUpdate) []any {
	args := make([]any, 0, 4+3*len(u.Events))
	args = append(args, u.Conv, string(rune(u.Form)), u.Epoch)
	for _, e := range u.Events {
		args = append(args, string(rune(e.Kind)), e.Seq, e.WriteMS)
	}
	return args
}
