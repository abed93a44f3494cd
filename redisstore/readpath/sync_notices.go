package readpath

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"sync"

	"github.com/redis/go-redis/v9"

	"github.com/offlinebox/offlinebox/redisstore"
)

// Counting a small group's notices without asking Redis each time. Sync
// takes the join and leave notices in (read, last] out of every small
// group's stored unread (readSyncHeads): a ZCOUNT per group per sync, the
// same few seqs counted again by every member who reconnects.
//
// Within an epoch the notice set changes in two ways only: the sequencing
// script adds a notice with the record that takes its seq, and expiry
// removes those below `first` in the script that moves `first` (a rebuild
// starts another epoch). So the notices of seqs up to a conversation's
// max seq S, at or above its `first` F, never change while the epoch
// lasts: a copy of them answers any count over (lo, hi] with hi ≤ S, read
// after the copy (a ZCOUNT of [lo, hi]), as the set stood when `first`
// was read, by counting from max(lo, first).
//
// The copy is taken in the heads pipeline of a sync that missed it: the
// meta (S and the epoch) first, then the set, then the epoch and `first`
// again. Every notice up to S was in the set when S was read; expiry may
// have removed some below the `first` read last since, never one above
// it; a notice added meanwhile is above S and left out; an epoch that
// changed between the two reads voids the copy.

// The copies kept: of at most maxNoticeConvs conversations, each of at
// most maxNoticesKept seqs (a group with more is counted by Redis).
const (
	maxNoticeConvs = 4096
	maxNoticesKept = 256
)

// noticeCopy holds every notice of one epoch in [from, upTo], ascending.
type noticeCopy struct {
	epoch uint64
	from  uint64
	upTo  uint64
	seqs  []uint64
}

// count is how many notices lie in [lo, hi] once those below first are
// gone: the ZCOUNT of the set when first was read, for hi ≤ upTo and
// first ≥ from.
func (c noticeCopy) count(lo, hi, first uint64) uint64 {
	lo = max(lo, first)
	if lo > hi {
		return 0
	}
	a, _ := slices.BinarySearch(c.seqs, lo)
	b, found := slices.BinarySearch(c.seqs, hi)
	if found {
		b++
	}
	return uint64(b - a)
}

// noticeCopies are the copies, by conversation.
type noticeCopies struct {
	mu     sync.Mutex
	copies *redisstore.Bounded[noticeCopy] // entries only
}

func newNoticeCopies() *noticeCopies {
	return &noticeCopies{copies: redisstore.NewBounded[noticeCopy](maxNoticeConvs, 0)}
}

// covering is the copy of conv that counts up to hi, if one is kept.
func (n *noticeCopies) covering(conv string, hi uint64) (noticeCopy, bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	c, ok := n.copies.Get(conv)
	return c, ok && hi <= c.upTo
}

// keep stores c unless the copy kept reaches further in the same epoch.
func (n *noticeCopies) keep(conv string, c noticeCopy) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if old, ok := n.copies.Get(conv); ok && old.epoch == c.epoch && old.upTo >= c.upTo {
		return
	}
	n.copies.Put(conv, c, 0)
}

// drop forgets conv's copy of epoch, one the conversation outlived, so
// that the next read takes another.
func (n *noticeCopies) drop(conv string, epoch uint64) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if c, ok := n.copies.Get(conv); ok && c.epoch == epoch {
		n.copies.Remove(conv)
	}
}

// noticeRead is one small group's notice count in a heads pipeline: from
// the copy (use), from Redis (count), and the commands that take a copy
// when none was kept (set, again).
type noticeRead struct {
	lo, hi uint64
	use    *noticeCopy
	count  *redis.IntCmd
	set    *redis.StringSliceCmd
	again  *redis.SliceCmd
}

// queueNotices queues on p the count of conv's notices in [lo, hi]: none
// when a kept copy covers hi, else a ZCOUNT. queueCopy, queued after the
// meta read, takes a copy when none was used.
func (s *Reader) queueNotices(ctx context.Context, p redis.Pipeliner, conv string, lo, hi uint64) *noticeRead {
	r := &noticeRead{lo: lo, hi: hi}
	if c, ok := s.notices.covering(conv, hi); ok {
		r.use = &c
		return r
	}
	r.count = p.ZCount(ctx, s.keys.Notices(conv), strconv.FormatUint(lo, 10), strconv.FormatUint(hi, 10))
	return r
}

// queueCopy queues the reads of a copy of conv's notices, for a read that
// had none; it must follow the meta read of the same pipeline.
func (s *Reader) queueCopy(ctx context.Context, p redis.Pipeliner, conv string, r *noticeRead) {
	if r == nil || r.use != nil {
		return
	}
	r.set = p.ZRangeByScore(ctx, s.keys.Notices(conv), &redis.ZRangeBy{Min: "-inf", Max: "+inf", Count: maxNoticesKept + 1})
	r.again = p.HMGet(ctx, s.keys.ConvMeta(conv), redisstore.MetaEpoch, redisstore.MetaFirst)
}

// settle gives the count once the pipeline ran, meta being its meta read
// (seq, epoch, first first): from the copy when the epoch is still the
// copy's, else from the ZCOUNT; keeping the copy the pipeline took. ok is
// false when neither answers (the epoch changed since the copy): the
// caller counts again.
func (s *Reader) settle(conv string, r *noticeRead, meta []any) (n uint64, ok bool) {
	seq, epoch := redisstore.ReplyUint(meta[0]), redisstore.ReplyUint(meta[1])
	if r.use != nil {
		if r.use.epoch != epoch || meta[1] == nil {
			s.notices.drop(conv, r.use.epoch)
			return 0, false
		}
		return r.use.count(r.lo, r.hi, noticeFirst(meta[2])), true
	}
	if r.set != nil && r.set.Err() == nil && r.again.Err() == nil && meta[1] != nil {
		again := r.again.Val()
		if vs := r.set.Val(); len(vs) <= maxNoticesKept && redisstore.ReplyUint(again[0]) == epoch {
			c := noticeCopy{epoch: epoch, from: noticeFirst(again[1]), upTo: seq}
			for _, v := range vs {
				if n, err := strconv.ParseUint(v, 10, 64); err == nil && n >= c.from && n <= seq {
					c.seqs = append(c.seqs, n)
				}
			}
			slices.Sort(c.seqs)
			s.notices.keep(conv, c)
		}
	}
	return uint64(r.count.Val()), r.count.Err() == nil
}

// noticeFirst is the meta's first as expiry left it: absent, nothing was
// removed (the sequencing script reads an absent first as 1).
func noticeFirst(v any) uint64 {
	if v == nil {
		return 1
	}
	return redisstore.ReplyUint(v)
}

// settleNotices gives the small groups' notice counts of a heads
// pipeline that ran (reads[i] nil: none asked), counting again in one
// pipeline those whose copy the epoch outlived.
func (s *Reader) settleNotices(ctx context.Context, convs []string, reads []*noticeRead, metas []*redis.SliceCmd) ([]uint64, error) {
	counts := make([]uint64, len(convs))
	var again []int
	for i, r := range reads {
		if r == nil {
			continue
		}
		n, ok := s.settle(convs[i], r, metas[i].Val())
		if !ok {
			again = append(again, i)
		}
		counts[i] = n
	}
	if len(again) == 0 {
		return counts, nil
	}
	cmds := make([]*redis.IntCmd, len(again))
	_, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for k, i := range again {
			cmds[k] = p.ZCount(ctx, s.keys.Notices(convs[i]), strconv.FormatUint(reads[i].lo, 10), strconv.FormatUint(reads[i].hi, 10))
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("count notices of %d conversations: %w", len(again), err)
	}
	for k, i := range again {
		counts[i] = uint64(cmds[k].Val())
	}
	return counts, nil
}
