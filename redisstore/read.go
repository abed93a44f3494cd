package redisstore

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"sort"

	"github.com/redis/go-redis/v9"
)

var (
	//go:embed lua/read_receipt.lua
	readReceiptLua    string
	readReceiptScript = redis.NewScript(readReceiptLua)
)

// ReadMark says a user has read a conversation up to Seq (on any device).
type ReadMark struct {
	User string
	Conv string
	Seq  uint64
}

// ApplyReads applies read receipts (see lua/read_receipt.lua): one script
// per user, all users in one pipeline. s must hold the keys of every user
// of marks (see InboxRouter); ErrUserMoved means one moved: route again.
// Marks of the same user and conversation collapse to the highest seq. It
// returns how many conversations' read seq rose. A user whose call can
// never succeed (a key of the wrong type) fails alone: the error is then
// ItemErrors, naming each of that user's marks, and every other user's
// marks were applied.
func (s *Store) ApplyReads(ctx context.Context, marks []ReadMark) (int, error) {
	if len(marks) == 0 {
		return 0, nil
	}
	type uc struct{ user, conv string }
	top := map[uc]uint64{}
	marksOf := map[string][]int{} // user → indexes of their marks
	for i, m := range marks {
		k := uc{m.User, m.Conv}
		top[k] = max(top[k], m.Seq)
		marksOf[m.User] = append(marksOf[m.User], i)
	}
	perUser := map[string][]any{}
	for k, seq := range top {
		perUser[k.user] = append(perUser[k.user], k.conv, seq)
	}
	users := make([]string, 0, len(perUser))
	for u := range perUser {
		users = append(users, u)
	}
	sort.Strings(users)
	calls := make([]scriptCall, len(users))
	for i, u := range users {
		calls[i] = scriptCall{keys: []string{s.keys.Inbox(u), s.keys.Mentions(u), s.keys.Profile(u),
			s.keys.MentionIndex(u)}, args: perUser[u]}
	}
	ctx, cancel := context.WithTimeout(ctx, s.cfg.CallTimeout)
	defer cancel()
	cmds, err := s.evalPiped(ctx, readReceiptScript, calls)
	if anyUserMoved(cmds) {
		return 0, fmt.Errorf("apply read receipts: %w", ErrUserMoved)
	}
	if cmds == nil && err != nil {
		return 0, fmt.Errorf("apply read receipts of %d users: %w", len(users), err)
	}
	raised, err := countFailures(cmds, func(i int) []int { return marksOf[users[i]] },
		func(i int) string { return "read receipts of " + users[i] })
	var failed ItemErrors
	if err != nil && !errors.As(err, &failed) {
		return 0, fmt.Errorf("apply read receipts of %d users: %w", len(users), err)
	}
	return raised, err
}
