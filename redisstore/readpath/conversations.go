package readpath

import (
	"context"
	_ "embed"
	"encoding/json"
	"fmt"
	"sort"
	"strconv"

	"github.com/redis/go-redis/v9"

	"github.com/offlinebox/offlinebox/schemas"

	"github.com/offlinebox/offlinebox/redisstore"
)

var (
	//go:embed lua/conversations_page.lua
	conversationsPageLua    string
	conversationsPageScript = redis.NewScript(conversationsPageLua)
)

// ListCursor marks where a page of the conversation list ended: the next
// page starts after this conversation. The zero value starts at the top.
type ListCursor struct {
	Activity int64
	Conv     string
}

// ConvItem is one row of the conversation list.
type ConvItem struct {
	Conv  string
	Type  schemas.ConvType
	Large bool
	// Unread counts messages from others above the user's read seq.
	Unread uint64
	// LastSeq is the last seq of the conversation delivered to the user.
	LastSeq uint64
	ReadSeq uint64
	// Activity is the write time (ms) of the conversation's last message.
	Activity int64
	Preview  *redisstore.Preview
	// Mentions pending for the user in this conversation.
	Mentions int
	// Acked is the highest seq the asking device acked (0: none).
	Acked uint64
	// Left: the user left this group. They still read (and mark read)
	// what was sent while they were a member; nothing after.
	Left bool
}

// ConvList is one page of the list, most recently active first.
type ConvList struct {
	Items []ConvItem
	// Next is where the following page starts; nil on the last page.
	Next *ListCursor
}

// ListConversations reads one page of user's conversation list: one script
// on the user's slot, plus one pipelined read of the groups' own keys (the
// large groups' order and counters are derived from them, and whether the
// user left a small one). The script's work is bounded by the page and
// the user's large groups; a user whose list indexes predate them gets
// them built first, in bounded steps (BuildListIndex). device may be
// empty; then Acked is 0. The groups are read on the main store, the
// user's keys on the store the router routes them to.
func (s *Reader) ListConversations(ctx context.Context, user, device string, after ListCursor, limit int) (ConvList, error) {
	return redisstore.OnUser(ctx, s.router, user, func(users *redisstore.Store) (ConvList, error) {
		return s.listConversationsWith(ctx, users, user, device, after, limit)
	})
}

// listConversationsWith is ListConversations with the user's keys on
// users; ErrUserMoved means users no longer holds them.
func (s *Reader) listConversationsWith(ctx context.Context, users *redisstore.Store, user, device string, after ListCursor, limit int) (ConvList, error) {
	if limit < 1 {
		return ConvList{}, fmt.Errorf("list conversations of %s: limit %d is below 1", user, limit)
	}
	score, afterConv := "+inf", ""
	if after.Conv != "" {
		score, afterConv = strconv.FormatInt(after.Activity, 10), after.Conv
	}
	vals, err := sideOf(users).listPage(ctx, user, device, score, afterConv, limit+1)
	if redis.HasErrorPrefix(err, redisstore.RefusalUnindexed) {
		if err = users.BuildListIndex(ctx, user); err == nil {
			vals, err = sideOf(users).listPage(ctx, user, device, score, afterConv, limit+1)
		}
	}
	if err != nil {
		return ConvList{}, fmt.Errorf("list conversations of %s: %w", user, redisstore.AsUserMoved(err))
	}
	ctx, cancel := context.WithTimeout(ctx, s.cfg.CallTimeout)
	defer cancel()
	small, large, err := parseListRecords(vals)
	if err != nil {
		return ConvList{}, fmt.Errorf("list conversations of %s: %w", user, err)
	}
	if err := s.readGroupSides(ctx, user, small, large); err != nil {
		return ConvList{}, fmt.Errorf("list conversations of %s: %w", user, err)
	}
	items := small
	for _, it := range large {
		if after.Conv == "" || listedAfter(it, after) {
			items = append(items, it)
		}
	}
	sort.SliceStable(items, func(i, j int) bool { return listedAfter(items[j], ListCursor{items[i].Activity, items[i].Conv}) })
	out := ConvList{Items: items}
	if len(items) > limit {
		out.Items = items[:limit]
		last := out.Items[limit-1]
		out.Next = &ListCursor{Activity: last.Activity, Conv: last.Conv}
	}
	return out, nil
}

// listPage runs conversations_page.lua on the user's keys.
func (s side) listPage(ctx context.Context, user, device, score, afterConv string, limit int) ([]any, error) {
	ctx, cancel := context.WithTimeout(ctx, s.cfg.CallTimeout)
	defer cancel()
	k := s.keys
	keys := []string{
		k.ConvList(user), k.Inbox(user), k.Previews(user), k.MentionIndex(user), k.Cursor(user, device), k.Profile(user),
	}
	return conversationsPageScript.Run(ctx, s.rdb, keys, score, afterConv, limit).Slice()
}

// listedAfter reports whether it comes after the cursor c in the list: the list is
// ordered by activity, newest first, ties by conversation id descending (the
// order of ZREVRANGEBYSCORE).
func listedAfter(it ConvItem, c ListCursor) bool {
	if it.Activity != c.Activity {
		return it.Activity < c.Activity
	}
	return it.Conv < c.Conv
}

// listRecordLen is the number of values per conversation in
// conversations_page.lua's answer (its record function).
const listRecordLen = 9

// parseListRecords splits conversations_page.lua's answer into the small
// conversations and the large groups (still without their counters).
func parseListRecords(vals []any) (small, large []ConvItem, err error) {
	if len(vals) < 1 || (len(vals)-1)%listRecordLen != 0 {
		return nil, nil, fmt.Errorf("script answered %d values", len(vals))
	}
	nSmall := int(redisstore.ReplyUint(vals[0]))
	for i := 1; i < len(vals); i += listRecordLen {
		r := vals[i : i+listRecordLen]
		it := ConvItem{Conv: redisstore.ReplyString(r[0])}
		it.Activity, _ = strconv.ParseInt(redisstore.ReplyString(r[1]), 10, 64)
		it.LastSeq, it.ReadSeq = redisstore.ReplyUint(r[2]), redisstore.ReplyUint(r[3])
		it.Unread = subFloor(it.LastSeq, it.ReadSeq)
		joined := redisstore.ReplyUint(r[4])
		form := redisstore.InboxFormOf(redisstore.ReplyString(r[5]))
		it.Type, it.Large = form.Type(), form.Large()
		if pv := redisstore.ReplyString(r[6]); pv != "" {
			var p redisstore.Preview
			if json.Unmarshal([]byte(pv), &p) == nil {
				it.Preview = &p
			}
		}
		it.Acked = redisstore.ReplyUint(r[7])
		it.Mentions = int(redisstore.ReplyUint(r[8]))
		if (i-1)/listRecordLen < nSmall {
			small = append(small, it)
			continue
		}
		it.Type, it.Large = schemas.ConvType_CONV_TYPE_GROUP, true
		// Until fillLargeGroups derives them, LastSeq holds the join seq.
		it.LastSeq = joined
		large = append(large, it)
	}
	return small, large, nil
}

// readGroupSides reads what the list takes from the groups' own keys, in
// one pipeline: the large groups' counters (fillLargeGroups) and which
// small groups the user left, with their notices (markLeft). A group
// whose copies its meta outlived is read again in a second one.
func (s *Reader) readGroupSides(ctx context.Context, user string, small, large []ConvItem) error {
	var fill func()
	var mark func() []int
	_, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		fill = s.fillLargeGroups(ctx, p, large)
		mark = s.markLeft(ctx, p, user, small, smallGroupsOf(small), true)
		return nil
	})
	if err != nil {
		return fmt.Errorf("read groups: %w", err)
	}
	fill()
	again := mark()
	if len(again) == 0 {
		return nil
	}
	_, err = s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		mark = s.markLeft(ctx, p, user, small, again, false)
		return nil
	})
	if err != nil {
		return fmt.Errorf("read groups again: %w", err)
	}
	mark()
	return nil
}

// fillLargeGroups derives the counters, order and preview of large groups
// from the groups' own keys: no per-member writes happen for them. The
// unread is the seqs above the user's read (or join) seq less the join and
// leave notices among them (P{c:C}:ns). It queues its reads on p and
// returns what fills large once p ran.
func (s *Reader) fillLargeGroups(ctx context.Context, p redis.Pipeliner, large []ConvItem) func() {
	metas := make([]*redis.SliceCmd, len(large))
	alls := make([]*redis.StringSliceCmd, len(large))
	notices := make([]*redis.IntCmd, len(large))
	for i, it := range large {
		// The notices are counted before the counter is read: one
		// sequenced in between is counted as unread until the next
		// read, never a message hidden.
		seen := max(it.ReadSeq, it.LastSeq)
		notices[i] = p.ZCount(ctx, s.keys.Notices(it.Conv), strconv.FormatUint(seen+1, 10), "+inf")
		metas[i] = p.HMGet(ctx, s.keys.ConvMeta(it.Conv), redisstore.MetaSeq, redisstore.MetaLastTime, redisstore.MetaLastSender, redisstore.MetaLastPreview, redisstore.MetaEpoch)
		alls[i] = p.ZRange(ctx, s.keys.MentionAll(it.Conv), 0, -1)
	}
	return func() {
		for i := range large {
			it := &large[i]
			m := metas[i].Val()
			seq := redisstore.ReplyUint(m[0])
			seen := max(it.ReadSeq, it.LastSeq) // LastSeq holds the join seq here
			it.LastSeq = seq
			it.Unread = subFloor(subFloor(seq, seen), uint64(notices[i].Val()))
			it.Activity, _ = strconv.ParseInt(redisstore.ReplyString(m[1]), 10, 64)
			if seq > 0 {
				it.Preview = &redisstore.Preview{Seq: seq, Epoch: redisstore.ReplyUint(m[4]), Sender: redisstore.ReplyString(m[2]), TS: it.Activity, Text: redisstore.ReplyString(m[3])}
			}
			for _, a := range alls[i].Val() {
				if n, err := strconv.ParseUint(a, 10, 64); err == nil && n > seen {
					it.Mentions++
				}
			}
		}
	}
}

// subFloor is a − b, never below 0.
func subFloor(a, b uint64) uint64 {
	if a < b {
		return 0
	}
	return a - b
}

// markLeft sets Left on the groups of items the user is no longer a
// member of: a read of each group's member set (large groups are listed
// only while the user is a member). With it it takes the join and leave
// notices out of each group's unread: the inbox counts every seq
// delivered, the notices among (read, last] are no one's unread (as in
// large groups, fillLargeGroups). With copies, a group whose member copy
// (and notice copy, if it has unread) sync keeps is answered from them
// and one meta read that shows whether they stand (sync_members.go,
// sync_notices.go). It queues its reads of items[groups] on p and returns
// what marks items once p ran, which reports the groups whose copies the
// meta outlived.
func (s *Reader) markLeft(ctx context.Context, p redis.Pipeliner, user string, items []ConvItem, groups []int, copies bool) func() []int {
	in := make([]*redis.BoolCmd, len(groups))
	notices := make([]*redis.IntCmd, len(groups))
	metas := make([]*redis.SliceCmd, len(groups))
	members := make([]*memberCopy, len(groups))
	counts := make([]*noticeCopy, len(groups))
	for k, i := range groups {
		it := items[i]
		if copies {
			if members[k] = s.members.get(it.Conv); members[k] != nil {
				c, ok := s.notices.covering(it.Conv, it.LastSeq)
				if it.Unread == 0 || ok {
					if it.Unread > 0 {
						counts[k] = &c
					}
					metas[k] = p.HMGet(ctx, s.keys.ConvMeta(it.Conv), redisstore.MetaEpoch, redisstore.MetaFirst, redisstore.MetaMemberVersion)
					continue
				}
			}
		}
		in[k] = p.HExists(ctx, s.keys.Members(it.Conv), user)
		if it.Unread > 0 {
			notices[k] = p.ZCount(ctx, s.keys.Notices(it.Conv), strconv.FormatUint(it.ReadSeq+1, 10), strconv.FormatUint(it.LastSeq, 10))
		}
	}
	return func() (again []int) {
		for k, i := range groups {
			it := &items[i]
			if m := metas[k]; m != nil {
				v := m.Val()
				epoch, mc, nc := redisstore.ReplyUint(v[0]), members[k], counts[k]
				staleMembers := !mc.current(v[0], v[2])
				staleNotices := nc != nil && nc.epoch != epoch
				if staleMembers || staleNotices {
					// the group outlived the copy: the next read takes
					// another instead of finding this one again
					if staleMembers {
						s.members.drop(it.Conv, mc)
					}
					if staleNotices {
						s.notices.drop(it.Conv, nc.epoch)
					}
					again = append(again, i)
					continue
				}
				_, member := mc.joined[user]
				it.Left = !member
				if nc != nil {
					it.Unread = subFloor(it.Unread, nc.count(it.ReadSeq+1, it.LastSeq, noticeFirst(v[1])))
				}
				continue
			}
			it.Left = !in[k].Val()
			if notices[k] != nil {
				it.Unread = subFloor(it.Unread, uint64(notices[k].Val()))
			}
		}
		return again
	}
}

// smallGroupsOf lists the indexes of the small groups among items.
func smallGroupsOf(items []ConvItem) []int {
	var groups []int
	for i, it := range items {
		if it.Type == schemas.ConvType_CONV_TYPE_GROUP && !it.Large {
			groups = append(groups, i)
		}
	}
	return groups
}
