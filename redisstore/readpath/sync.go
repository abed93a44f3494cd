package readpath

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/redis/go-redis/v9"

	"github.com/offlinebox/offlinebox/redisstore"
)

// syncUser is a snapshot of the user's slot as sync needs it.
type syncUser struct {
	inbox    map[string]string
	activity map[string]int64
	large    map[string]bool
	mentions []mentionRef
	cursors  map[string]redisstore.Position
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

// Sync answers one device's catch-up request: a page of the pending
// mentions first (sync_mentions.go), then conversations by priority, each
// sliced on its own, the whole within the byte budget (see schemas/redis-keys.md and the read path in
// DESIGN.md). It
// writes nothing but, with req.NowMS, the device's last-use time, in the
// transaction that reads the user's slot (a registered device only: an
// evicted or new one is registered by its next ack). Every refusal of a
// request comes before that (the API validates first). A device that
// syncs is in use whether or not it had anything new to ack, so the least
// recently used device evicted past the bound is one that stopped pulling.
// The same request on the same state gets the same answer. The
// conversations are read on the main store, the user's keys on the store
// the router routes them to (routed again once when they moved meanwhile).
func (s *Reader) Sync(ctx context.Context, req SyncRequest) (*SyncResult, error) {
	return redisstore.OnUser(ctx, s.router, req.User, func(users *redisstore.Store) (*SyncResult, error) {
		return s.syncWith(ctx, users, req)
	})
}

// syncWith is Sync with the user's keys on users; ErrUserMoved means
// users no longer holds them.
func (s *Reader) syncWith(ctx context.Context, users *redisstore.Store, req SyncRequest) (*SyncResult, error) {
	if err := req.validate(); err != nil {
		return nil, err
	}
	us, err := sideOf(users).readSyncUser(ctx, req.User, req.Device, req.NowMS)
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
func (s side) readSyncUser(ctx context.Context, user, device string, nowMS int64) (*syncUser, error) {
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
		loc = p.HGet(ctx, s.keys.Profile(user), redisstore.ProfileLocation)
		if nowMS > 0 {
			p.ZAddXX(ctx, s.keys.Devices(user), redis.Z{Score: float64(nowMS), Member: device})
		}
		return nil
	})
	if err != nil && err != redis.Nil {
		return nil, fmt.Errorf("sync %s: read inbox: %w", user, err)
	}
	if loc.Val() == redisstore.ProfileOnHot {
		return nil, fmt.Errorf("sync %s: %w", user, redisstore.ErrUserMoved)
	}
	us := &syncUser{
		inbox:    ib.Val(),
		activity: make(map[string]int64, len(cl.Val())),
		large:    largeGroupsOf(ib.Val()),
		cursors:  redisstore.ParseCursors(cur.Val()),
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
		if v == string(redisstore.InboxLarge) && strings.HasSuffix(f, ":"+string(rune(redisstore.FieldType))) {
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
