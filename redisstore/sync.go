package redisstore

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/redis/go-redis/v9"

	"github.com/offlinebox/offlinebox/schemas"
)

// syncUser is a snapshot of the user's slot as sync needs it.
type syncUser struct {
	inbox    map[string]string
	activity map[string]int64
	large    map[string]bool
	mentions []mentionRef
	cursors  map[string]Position
	evicted  bool
	convs    []string // syncConvs, once sorted
}

// mentionRef is one entry of the mention lane (or an @all of a large group).
type mentionRef struct {
	conv string
	seq  uint64
	ts   int64
	all  bool
}

// syncHead is what sync reads of one conversation before slicing it.
type syncHead struct {
	member bool         // the user is or was a member
	left   bool         // was, and is not now
	joined uint64       // the join seq of the oldest span the user belonged to
	spans  []MemberSpan // every span the user belonged to, the current one last (Left 0)
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

// Sync answers one device's catch-up request: a page of the pending
// mentions first (sync_mentions.go), then conversations by priority, each
// sliced on its own, the whole within the byte budget (see schemas/redis-keys.md and the read path in DESIGN.md). It
// writes nothing but, with req.NowMS, the device's last-use time, in the
// transaction that reads the user's slot (a registered device only: an
// evicted or new one is registered by its next ack). Every refusal of a
// request comes before that (the API validates first). A device that
// syncs is in use whether or not it had anything new to ack, so the least
// recently used device evicted past the bound is one that stopped pulling. The same request on
// the same state gets the same answer. s holds the conversations and the
// user's keys; InboxRouter.Sync reads the user's from the store holding
// them.
func (s *Store) Sync(ctx context.Context, req SyncRequest) (*SyncResult, error) {
	return s.syncWith(ctx, s, req)
}

// syncWith is Sync with the user's keys on users; ErrUserMoved means
// users no longer holds them.
func (s *Store) syncWith(ctx context.Context, users *Store, req SyncRequest) (*SyncResult, error) {
	if err := req.validate(); err != nil {
		return nil, err
	}
	us, err := users.readSyncUser(ctx, req.User, req.Device, req.NowMS)
	if err != nil {
		return nil, err
	}
	heads, err := s.readSyncHeads(ctx, req.User, us)
	if err != nil {
		return nil, err
	}
	plans, refs := planSync(req, us, heads)
	res := &SyncResult{Resync: us.evicted}
	b := newSyncBudget(req)
	// The conversations are placed with room held back for the lane,
	// which then has that room and what they left (sync_mentions.go).
	lane := &laneReader{s: s, req: req, refs: refs}
	if err := lane.reserve(ctx, b); err != nil {
		return nil, err
	}
	if err := s.fillConvs(ctx, req, plans, res, b); err != nil {
		return nil, err
	}
	b.lane, b.laneHeld = 0, nil
	if err := lane.fill(ctx, res, b); err != nil {
		return nil, err
	}
	res.Bytes = b.used
	return res, nil
}

// readSyncUser reads the user's slot in one transaction, so that inbox,
// list, lane and cursors are of one moment.
func (s *Store) readSyncUser(ctx context.Context, user, device string, nowMS int64) (*syncUser, error) {
	ctx, cancel := context.WithTimeout(ctx, s.cfg.CallTimeout)
	defer cancel()
	var (
		ib, cur *redis.MapStringStringCmd
		cl, mn  *redis.ZSliceCmd
		ev      *redis.BoolCmd
		loc     *redis.StringCmd
	)
	_, err := s.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		ib = p.HGetAll(ctx, s.keys.Inbox(user))
		cl = p.ZRangeWithScores(ctx, s.keys.ConvList(user), 0, -1)
		mn = p.ZRangeWithScores(ctx, s.keys.Mentions(user), 0, -1)
		cur = p.HGetAll(ctx, s.keys.Cursor(user, device))
		ev = p.SIsMember(ctx, s.keys.Evicted(user), device)
		loc = p.HGet(ctx, s.keys.Profile(user), ProfileLocation)
		if nowMS > 0 {
			p.ZAddXX(ctx, s.keys.Devices(user), redis.Z{Score: float64(nowMS), Member: device})
		}
		return nil
	})
	if err != nil && err != redis.Nil {
		return nil, fmt.Errorf("sync %s: read inbox: %w", user, err)
	}
	if loc.Val() == ProfileOnHot {
		return nil, fmt.Errorf("sync %s: %w", user, ErrUserMoved)
	}
	us := &syncUser{
		inbox:    ib.Val(),
		activity: make(map[string]int64, len(cl.Val())),
		large:    largeGroupsOf(ib.Val()),
		cursors:  deviceCursors(cur.Val()),
		evicted:  ev.Val(),
	}
	for _, z := range cl.Val() {
		us.activity[z.Member.(string)] = int64(z.Score)
	}
	for _, z := range mn.Val() {
		conv, seq, ok := strings.Cut(z.Member.(string), ":")
		if n, err := strconv.ParseUint(seq, 10, 64); ok && err == nil {
			us.mentions = append(us.mentions, mentionRef{conv: conv, seq: n, ts: int64(z.Score)})
		}
	}
	return us, nil
}

// largeGroupsOf finds the user's large groups in the inbox: the
// conversations whose form C:t is L.
func largeGroupsOf(inbox map[string]string) map[string]bool {
	out := map[string]bool{}
	for f, v := range inbox {
		if v == string(InboxLarge) && strings.HasSuffix(f, ":"+string(rune(FieldType))) {
			out[f[:len(f)-2]] = true
		}
	}
	return out
}

// syncConvs lists the user's conversations, sorted for a stable answer.
// The heads read and the plan both walk it: it is sorted once.
func (us *syncUser) syncConvs() []string {
	if us.convs != nil {
		return us.convs
	}
	out := make([]string, 0, len(us.activity)+len(us.large))
	for c := range us.activity {
		if !us.large[c] {
			out = append(out, c)
		}
	}
	for c := range us.large {
		out = append(out, c)
	}
	sort.Strings(out)
	us.convs = out
	return out
}

// readSyncHeads reads every conversation's counters and the user's
// membership in one pipeline (each conversation in its own slot).
func (s *Store) readSyncHeads(ctx context.Context, user string, us *syncUser) (map[string]syncHead, error) {
	ctx, cancel := context.WithTimeout(ctx, s.cfg.CallTimeout)
	defer cancel()
	convs := us.syncConvs()
	metas := make([]*redis.SliceCmd, len(convs))
	// members: the user's membership, from a kept copy of a small group's
	// members where one stands (sync_members.go)
	members := make([]*memberRead, len(convs))
	alls := make([]*redis.ZSliceCmd, len(convs))
	notices := make([]*redis.IntCmd, len(convs))
	// small: the notices the small groups' stored unread counted, from a
	// kept copy where one covers them (sync_notices.go)
	small := make([]*noticeRead, len(convs))
	reads := make([]uint64, len(convs))
	_, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, c := range convs {
			reads[i] = readReplyUint(us.inbox[InboxField(c, FieldRead)])
			group := us.inbox[InboxField(c, FieldType)] == string(InboxGroup)
			if us.large[c] {
				// Counted before the counter is read (see fillLargeGroups).
				notices[i] = p.ZCount(ctx, s.keys.Notices(c), strconv.FormatUint(reads[i]+1, 10), "+inf")
			} else if last := readReplyUint(us.inbox[InboxField(c, FieldLast)]); last > reads[i] && group {
				small[i] = s.queueNotices(ctx, p, c, reads[i]+1, last)
			}
			metas[i] = p.HMGet(ctx, s.keys.ConvMeta(c), MetaSeq, MetaEpoch, MetaFirst, MetaLastTime, MetaType, MetaMemberVersion)
			s.queueCopy(ctx, p, c, small[i])
			members[i] = s.queueMembership(ctx, p, c, user, group && !us.large[c])
			if us.large[c] {
				alls[i] = p.ZRangeWithScores(ctx, s.keys.MentionAll(c), 0, -1)
			}
		}
		return nil
	})
	// A copy this sync set out to take and did not ends its take on every
	// return, so that another sync takes it.
	defer s.abandonTakes(convs, members)
	if err != nil && err != redis.Nil {
		return nil, fmt.Errorf("sync %s: read conversations: %w", user, err)
	}
	for i, c := range convs {
		// A pipeline's error is its first command's: a redis.Nil there
		// hides whatever failed after it.
		if err := metas[i].Err(); err != nil {
			return nil, fmt.Errorf("sync %s: read conversation %s: %w", user, c, err)
		}
	}
	counts, err := s.settleNotices(ctx, convs, small, metas)
	if err != nil {
		return nil, fmt.Errorf("sync %s: %w", user, err)
	}
	type membership struct {
		joined, past string
		member       bool
	}
	ms := make([]membership, len(convs))
	var again []int
	for i, c := range convs {
		m := metas[i].Val()
		var settled bool
		var err error
		if ms[i].joined, ms[i].member, ms[i].past, settled, err = s.membership(c, user, members[i], m[1], m[5]); err != nil {
			return nil, fmt.Errorf("sync %s: %w", user, err)
		}
		if !settled {
			again = append(again, i)
		}
	}
	if len(again) > 0 {
		if err := s.rereadMembership(ctx, convs, user, members, again); err != nil {
			return nil, fmt.Errorf("sync %s: %w", user, err)
		}
		for _, i := range again {
			m := metas[i].Val()
			var err error
			if ms[i].joined, ms[i].member, ms[i].past, _, err = s.membership(convs[i], user, members[i], m[1], m[5]); err != nil {
				return nil, fmt.Errorf("sync %s: %w", user, err)
			}
		}
	}
	heads := make(map[string]syncHead, len(convs))
	for i, c := range convs {
		j := ms[i].joined
		spans := parsePastSpans(ms[i].past)
		if !ms[i].member && len(spans) == 0 {
			continue
		}
		m := metas[i].Val()
		h := syncHead{member: true, joined: readReplyUint(j), seq: readReplyUint(m[0]), epoch: readReplyUint(m[1])}
		h.spans = spans
		if ms[i].member {
			h.spans = append(h.spans, MemberSpan{Joined: readReplyUint(j)})
		}
		if len(spans) > 0 {
			// Each span the user belonged to is theirs to read; a former
			// member's conversation ends where they left.
			h.joined = spans[0].Joined
			if !ms[i].member {
				h.left, h.seq = true, min(h.seq, spans[len(spans)-1].Left-1)
			}
		}
		h.first = readReplyUint(m[2])
		if h.first == 0 {
			h.first = h.seq + 1
		}
		h.lts = int64(readReplyUint(m[3]))
		h.ctype = ConvTypeOfCode(readReplyString(m[4]))
		if notices[i] != nil {
			h.notices, h.noticesAbove = uint64(notices[i].Val()), reads[i]
		} else if small[i] != nil {
			h.notices, h.noticesAbove = counts[i], reads[i]
		}
		if alls[i] != nil {
			for _, z := range alls[i].Val() {
				if n, err := strconv.ParseUint(z.Member.(string), 10, 64); err == nil {
					h.alls = append(h.alls, mentionRef{conv: c, seq: n, ts: int64(z.Score), all: true})
				}
			}
		}
		heads[c] = h
	}
	return heads, nil
}
