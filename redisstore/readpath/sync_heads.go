package readpath

import (
	"context"
	"fmt"
	"strconv"

	"github.com/redis/go-redis/v9"

	"github.com/offlinebox/offlinebox/schemas"

	"github.com/offlinebox/offlinebox/redisstore"
)

// syncHead is what sync reads of one conversation before slicing it.
type syncHead struct {
	member bool                    // the user is or was a member
	left   bool                    // was, and is not now
	joined uint64                  // the join seq of the oldest span the user belonged to
	spans  []redisstore.MemberSpan // every span the user belonged to, the current one last (Left 0)
	seq    uint64
	epoch  uint64
	first  uint64
	lts    int64
	ctype  schemas.ConvType
	alls   []mentionRef
	// notices: the join and leave seqs above the inbox's read seq
	// (noticesAbove): of a large group all, of a small one up to its last
	// delivered seq
	notices, noticesAbove uint64
}

// headReads are the replies the heads pipeline queues, a slot per
// conversation of convs.
type headReads struct {
	convs []string
	metas []*redis.SliceCmd
	// members: the user's membership, from a kept copy of a small group's
	// members where one stands (sync_members.go)
	members []*memberRead
	alls    []*redis.ZSliceCmd
	notices []*redis.IntCmd
	// small: the notices the small groups' stored unread counted, from a
	// kept copy where one covers them (sync_notices.go)
	small []*noticeRead
	reads []uint64
}

func newHeadReads(convs []string) *headReads {
	return &headReads{convs: convs, metas: make([]*redis.SliceCmd, len(convs)), members: make([]*memberRead, len(convs)),
		alls: make([]*redis.ZSliceCmd, len(convs)), notices: make([]*redis.IntCmd, len(convs)),
		small: make([]*noticeRead, len(convs)), reads: make([]uint64, len(convs))}
}

// membership is the user's membership of one conversation as its hashes
// (or the kept copy of them) hold it.
type membership struct {
	joined, past string
	member       bool
}

// readSyncHeads reads every conversation's counters and the user's
// membership in one pipeline (each conversation in its own slot).
func (s *Reader) readSyncHeads(ctx context.Context, user string, us *syncUser) (map[string]syncHead, error) {
	ctx, cancel := context.WithTimeout(ctx, s.cfg.CallTimeout)
	defer cancel()
	r := newHeadReads(us.syncConvs())
	_, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		s.queueHeads(ctx, p, user, us, r)
		return nil
	})
	// A copy this sync set out to take and did not ends its take on every
	// return, so that another sync takes it.
	defer s.abandonTakes(r.convs, r.members)
	if err != nil && err != redis.Nil {
		return nil, fmt.Errorf("sync %s: read conversations: %w", user, err)
	}
	for i, c := range r.convs {
		// A pipeline's error is its first command's: a redis.Nil there
		// hides whatever failed after it.
		if err := r.metas[i].Err(); err != nil {
			return nil, fmt.Errorf("sync %s: read conversation %s: %w", user, c, err)
		}
	}
	counts, err := s.settleNotices(ctx, r.convs, r.small, r.metas)
	if err != nil {
		return nil, fmt.Errorf("sync %s: %w", user, err)
	}
	ms, err := s.settleMemberships(ctx, user, r)
	if err != nil {
		return nil, fmt.Errorf("sync %s: %w", user, err)
	}
	heads := make(map[string]syncHead, len(r.convs))
	for i, c := range r.convs {
		if h, ok := r.head(i, ms[i], counts[i]); ok {
			heads[c] = h
		}
	}
	return heads, nil
}

// queueHeads queues on p, for each of the user's conversations, its meta,
// the user's membership, and what its unread counted of notices and
// mentions of all.
func (s *Reader) queueHeads(ctx context.Context, p redis.Pipeliner, user string, us *syncUser, r *headReads) {
	for i, c := range r.convs {
		r.reads[i] = redisstore.ReplyUint(us.inbox[redisstore.InboxField(c, redisstore.FieldRead)])
		group := us.inbox[redisstore.InboxField(c, redisstore.FieldType)] == string(redisstore.InboxGroup)
		if us.large[c] {
			// Counted before the counter is read (see fillLargeGroups).
			r.notices[i] = p.ZCount(ctx, s.keys.Notices(c), strconv.FormatUint(r.reads[i]+1, 10), "+inf")
		} else if last := redisstore.ReplyUint(us.inbox[redisstore.InboxField(c, redisstore.FieldLast)]); last > r.reads[i] && group {
			r.small[i] = s.queueNotices(ctx, p, c, r.reads[i]+1, last)
		}
		r.metas[i] = p.HMGet(ctx, s.keys.ConvMeta(c), redisstore.MetaSeq, redisstore.MetaEpoch, redisstore.MetaFirst, redisstore.MetaLastTime, redisstore.MetaType, redisstore.MetaMemberVersion)
		s.queueCopy(ctx, p, c, r.small[i])
		r.members[i] = s.queueMembership(ctx, p, c, user, group && !us.large[c])
		if us.large[c] {
			r.alls[i] = p.ZRangeWithScores(ctx, s.keys.MentionAll(c), 0, -1)
		}
	}
}

// settleMemberships is the user's membership of each conversation: from
// what the pipeline read, and for a kept copy that was no longer current,
// from the hashes read again in one more round trip.
func (s *Reader) settleMemberships(ctx context.Context, user string, r *headReads) ([]membership, error) {
	ms := make([]membership, len(r.convs))
	var again []int
	for i, c := range r.convs {
		m := r.metas[i].Val()
		var settled bool
		var err error
		if ms[i].joined, ms[i].member, ms[i].past, settled, err = s.membership(c, user, r.members[i], m[1], m[5]); err != nil {
			return nil, err
		}
		if !settled {
			again = append(again, i)
		}
	}
	if len(again) == 0 {
		return ms, nil
	}
	if err := s.rereadMembership(ctx, r.convs, user, r.members, again); err != nil {
		return nil, err
	}
	for _, i := range again {
		m := r.metas[i].Val()
		var err error
		if ms[i].joined, ms[i].member, ms[i].past, _, err = s.membership(r.convs[i], user, r.members[i], m[1], m[5]); err != nil {
			return nil, err
		}
	}
	return ms, nil
}

// head is conversation i's head for a user of membership ms, whose small
// group's notices counted count; false when the user never belonged to it.
func (r *headReads) head(i int, ms membership, count uint64) (syncHead, bool) {
	c := r.convs[i]
	j := ms.joined
	spans := redisstore.ParsePastSpans(ms.past)
	if !ms.member && len(spans) == 0 {
		return syncHead{}, false
	}
	m := r.metas[i].Val()
	h := syncHead{member: true, joined: redisstore.ReplyUint(j), seq: redisstore.ReplyUint(m[0]), epoch: redisstore.ReplyUint(m[1])}
	h.spans = spans
	if ms.member {
		h.spans = append(h.spans, redisstore.MemberSpan{Joined: redisstore.ReplyUint(j)})
	}
	if len(spans) > 0 {
		// Each span the user belonged to is theirs to read; a former
		// member's conversation ends where they left.
		h.joined = spans[0].Joined
		if !ms.member {
			h.left, h.seq = true, min(h.seq, spans[len(spans)-1].Left-1)
		}
	}
	h.first = redisstore.ReplyUint(m[2])
	if h.first == 0 {
		h.first = h.seq + 1
	}
	h.lts = int64(redisstore.ReplyUint(m[3]))
	h.ctype = redisstore.ConvTypeOfCode(redisstore.ReplyString(m[4]))
	if r.notices[i] != nil {
		h.notices, h.noticesAbove = uint64(r.notices[i].Val()), r.reads[i]
	} else if r.small[i] != nil {
		h.notices, h.noticesAbove = count, r.reads[i]
	}
	if r.alls[i] != nil {
		for _, z := range r.alls[i].Val() {
			if n, err := strconv.ParseUint(z.Member.(string), 10, 64); err == nil {
				h.alls = append(h.alls, mentionRef{conv: c, seq: n, ts: int64(z.Score), all: true})
			}
		}
	}
	return h, true
}
