package rebuild

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"github.com/offlinebox/offlinebox/redisstore"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/offlinebox/offlinebox/schemas"
)

// Status codes of rebuild_commit.lua's reply, named as locals at the
// script's top without the prefix (STATUS_DONE for commitStatusDone).
const (
	commitStatusDone      = 1
	commitStatusRaced     = 0
	commitStatusShortened = -1
)

var (
	//go:embed lua/rebuild_commit.lua
	rebuildCommitLua    string
	rebuildCommitScript = redis.NewScript(rebuildCommitLua)
)

// HistorySource is the durable history a conversation is rebuilt from
// (the ClickHouse store satisfies it), read per epoch: an epoch a rebuild
// started holds its parent's records up to the counter it started at
// (see chstore's epochs). Range returns one epoch's records with fromSeq
// <= seq <= toSeq in ascending seq, each once, leaving out seqs it does not
// hold; MaxSeq is the highest seq an epoch holds (0: none); LatestEpoch is
// the newest epoch the history knows (0: none); RecordEpoch records where
// a new epoch starts, before the rebuild commits it.
type HistorySource interface {
	Range(ctx context.Context, conv string, epoch, fromSeq, toSeq uint64) ([]*schemas.Sequenced, error)
	MaxSeq(ctx context.Context, conv string, epoch uint64) (uint64, error)
	LatestEpoch(ctx context.Context, conv string) (uint64, error)
	RecordEpoch(ctx context.Context, conv string, epoch, parent, base uint64) error
}

// Rebuild errors.
var (
	// ErrNoHistory: the history holds nothing of the conversation.
	ErrNoHistory = errors.New("no history to rebuild from")
	// ErrHistoryBehind: the store's counter is above the history's (the
	// history sink has not caught up): rebuilding now would lower the
	// counter. Wait for the sink, or force it (a new epoch is set).
	ErrHistoryBehind = errors.New("history is behind the store's counter")
	// ErrRaced: the conversation was sequenced while it was being
	// rebuilt; nothing was replaced. Stop its writers and run again.
	ErrRaced = errors.New("conversation changed while it was rebuilt")
)

// Rebuild bounds.
const (
	DefaultPageSize = 1000
	// MaxPageSize is the widest span one history read may ask for.
	MaxPageSize = 10000
	// rebuildStagingTTL removes the staging keys of a rebuild that died; it
	// is renewed with every page written.
	rebuildStagingTTL = time.Hour
)

// Options tune Rebuild.
type Options struct {
	// Retention decides where the rebuilt timeline starts (as expiry
	// would have left it).
	Retention redisstore.Retention
	// Now is the time retention is measured against (time.Now when zero).
	Now time.Time
	// Force rebuilds even when the history is behind the store's counter.
	Force bool
	// PageSize: seqs per history read (DefaultPageSize when zero).
	PageSize int
}

func (o Options) validate() error {
	if err := o.Retention.Validate(); err != nil {
		return err
	}
	if o.PageSize < 0 || o.PageSize > MaxPageSize {
		return fmt.Errorf("rebuild: PageSize %d is outside 0..%d", o.PageSize, MaxPageSize)
	}
	return nil
}

func (o Options) withDefaults() Options {
	if o.Now.IsZero() {
		o.Now = time.Now()
	}
	if o.PageSize == 0 {
		o.PageSize = DefaultPageSize
	}
	return o
}

// MembersOutcome says what a rebuild did with the member set.
type MembersOutcome int

// Member set outcomes.
const (
	// MembersKept: the store still had them; untouched.
	MembersKept MembersOutcome = iota
	// MembersRestored: replayed from the history's records.
	MembersRestored
	// MembersUnknown: the history cannot tell them (a group whose founding
	// record retention dropped, or a source without membership records);
	// they must be restored by hand before the group is written to.
	MembersUnknown
)

// Result says what Rebuild put in place.
type Result struct {
	Conv string
	// Seq is the counter, First the timeline's floor, Epoch its epoch.
	Seq, First, Epoch uint64
	// NewEpoch: the epoch changed (clients' cursors get a rebase answer).
	NewEpoch bool
	// Entries in the rebuilt timeline.
	Entries int
	// Dedupe ids restored (records within the dedupe window).
	Dedupe int
	// Members says what happened to the member set; MemberCount is its size.
	Members     MembersOutcome
	MemberCount int
	// Hole is a seq the history lacks just below First: the timeline could
	// not reach further back (0: none).
	Hole uint64
}

// rebuildMeta is the conversation's meta as the rebuild found it.
type rebuildMeta struct {
	seq, epoch, first, ctype, lgs string
	hasMembers                    bool
	hasRoles                      bool // Keys.Roles exists
	held                          bool // Keys.Held is set
}

// Rebuild restores a conversation's Redis state from its
// history, for recovery after a Redis loss: the counter, the timeline
// within the retention window (entries byte for byte as sequencing wrote
// them), the epoch, the dedupe ids of the dedupe window, large groups' @all
// references, the last-message summary and, when the history can tell it,
// the member set. Run it while nothing sequences the conversation.
//
// The history is read in the store's epoch when the meta kept one the
// history knows, else in the newest epoch the history knows. The epoch
// stays only when it is the store's and its counter equals the history's:
// then the rebuilt timeline is the one clients saw. In every other case
// the counter the clients saw is unknown (the history may lag behind what
// was lost), so a new epoch is set, above every earlier one, and recorded
// in the history as starting from the epoch read at the rebuilt counter.
func (s *Rebuilder) Rebuild(ctx context.Context, src HistorySource, conv string, opt Options) (Result, error) {
	res := Result{Conv: conv}
	if err := schemas.ValidID("conv_id", conv); err != nil {
		return res, fmt.Errorf("rebuild: %w", err)
	}
	if err := opt.validate(); err != nil {
		return res, err
	}
	opt = opt.withDefaults()
	cur, err := s.rebuildReadMeta(ctx, conv)
	if err != nil {
		return res, err
	}
	curSeq, _ := strconv.ParseUint(cur.seq, 10, 64)
	curEpoch, _ := strconv.ParseUint(cur.epoch, 10, 64)
	curFirst, _ := strconv.ParseUint(cur.first, 10, 64)
	src0, top, latest, err := rebuildSource(ctx, src, conv, curEpoch)
	if err != nil {
		return res, err
	}
	keepFrom := uint64(0)
	switch {
	case cur.seq != "" && curSeq == top && curEpoch == src0 && !cur.held:
		// A held conversation never keeps its epoch: im.sequenced may hold
		// seqs above what the history has (see Keys.Held).
		keepFrom = max(curFirst, 1)
	case cur.seq != "" && curSeq > top && curEpoch >= src0 && !opt.Force:
		return res, fmt.Errorf("rebuild %s: store counter %d, history %d: %w", conv, curSeq, top, ErrHistoryBehind)
	}
	p, err := planFirst(ctx, src, conv, src0, top, keepFrom, opt)
	if err != nil {
		return res, err
	}
	if p.sample == nil {
		// Nothing read (the kept timeline is empty): the top record still
		// tells the type, the participants and the last message.
		rows, err := src.Range(ctx, conv, src0, top, top)
		if err != nil {
			return res, fmt.Errorf("rebuild %s: read history %d: %w", conv, top, err)
		}
		for _, e := range rows {
			p.note(e)
		}
	}
	if t := redisstore.ConvTypeOfCode(cur.ctype); t != schemas.ConvType_CONV_TYPE_UNSPECIFIED {
		p.ctype = t
	}
	res.Seq, res.First, res.Hole, res.Epoch = top, p.first, p.hole, curEpoch
	if keepFrom == 0 {
		res.Epoch, res.NewEpoch = max(uint64(opt.Now.UnixMilli()), curEpoch+1, latest+1, p.maxEpoch+1), true
		// Recorded before the commit: no record of the new epoch can reach
		// the history without its origin.
		if err := src.RecordEpoch(ctx, conv, res.Epoch, src0, top); err != nil {
			return res, fmt.Errorf("rebuild %s: record epoch %d: %w", conv, res.Epoch, err)
		}
	}
	var mr *memberReplay
	if cur.replaysMembers(p.ctype) && p.sample != nil {
		if mr, err = s.replayMembers(ctx, src, conv, p); err != nil {
			return res, err
		}
	}
	return s.rebuildApply(ctx, src, conv, opt, cur, p, mr, res)
}

// rebuildSource picks the epoch a rebuild reads: the store's own when the
// history holds records of it, else the newest the history knows. It
// returns that epoch, its highest seq and the newest epoch known.
func rebuildSource(ctx context.Context, src HistorySource, conv string, curEpoch uint64) (epoch, top, latest uint64, err error) {
	latest, err = src.LatestEpoch(ctx, conv)
	if err != nil {
		return 0, 0, 0, fmt.Errorf("rebuild %s: history epoch: %w", conv, err)
	}
	if latest == 0 {
		return 0, 0, 0, fmt.Errorf("rebuild %s: %w", conv, ErrNoHistory)
	}
	epoch = latest
	if curEpoch > 0 && curEpoch != latest {
		// A rebuild raced by the store's writers left a newer epoch no
		// record will ever carry: the store's epoch is still the live one.
		own, err := src.MaxSeq(ctx, conv, curEpoch)
		if err != nil {
			return 0, 0, 0, fmt.Errorf("rebuild %s: history max seq of epoch %d: %w", conv, curEpoch, err)
		}
		if own > 0 {
			return curEpoch, own, latest, nil
		}
	}
	top, err = src.MaxSeq(ctx, conv, epoch)
	if err != nil {
		return 0, 0, 0, fmt.Errorf("rebuild %s: history max seq: %w", conv, err)
	}
	if top == 0 {
		return 0, 0, 0, fmt.Errorf("rebuild %s: %w", conv, ErrNoHistory)
	}
	return epoch, top, latest, nil
}

// rebuildApply stages the timeline and members and commits them.
func (s *Rebuilder) rebuildApply(ctx context.Context, src HistorySource, conv string, opt Options,
	cur rebuildMeta, p *rebuildPlan, mr *memberReplay, res Result) (Result, error) {
	lgs, _ := strconv.ParseUint(cur.lgs, 10, 64)
	switch {
	case mr != nil:
		res.Members, res.MemberCount, lgs = MembersRestored, len(mr.members), mr.lgs
		if err := s.stageMembers(ctx, conv, mr); err != nil {
			return res, err
		}
	case !cur.hasMembers:
		res.Members = MembersUnknown
	}
	st, err := s.stageTimeline(ctx, src, conv, p, lgs, opt)
	if err != nil {
		return res, err
	}
	res.Entries, res.Dedupe = st.entries, st.dedupe
	args := []any{cur.seq, cur.epoch, p.top, p.first, res.Epoch, redisstore.TypeCode(p.ctype), st.entries}
	if mr != nil {
		args = append(args, "1", len(mr.members), mr.mver, mr.lgs)
	} else {
		args = append(args, "0", 0, 0, 0)
	}
	if n := p.newest; n != nil {
		preview, err := s.st.SealedPreviewText(ctx, n)
		if err != nil {
			return res, err
		}
		args = append(args, n.GetMessage().GetSender(), n.GetWriteTimeMs(), preview)
	} else {
		args = append(args, "", "", "")
	}
	args = append(args, strings.Join(st.notices, ","), boolCode(cur.held))
	for _, z := range st.mentionAll {
		args = append(args, z.Score, z.Member)
	}
	k := s.keys
	keys := []string{k.ConvMeta(conv), k.Timeline(conv), k.RebuildTimeline(conv),
		k.Members(conv), k.RebuildMembers(conv), k.MentionAll(conv),
		k.Roles(conv), k.RebuildRoles(conv), k.PastMembers(conv), k.RebuildPastMembers(conv), k.Notices(conv),
		k.Held(conv)}
	cctx, cancel := context.WithTimeout(ctx, s.cfg.CallTimeout)
	defer cancel()
	done, err := rebuildCommitScript.Run(cctx, s.rdb, keys, args...).Int()
	if err != nil || done != commitStatusDone {
		// Best effort: the staging keys also expire on their own.
		s.rdb.Del(cctx, k.RebuildTimeline(conv), k.RebuildMembers(conv), k.RebuildRoles(conv), k.RebuildPastMembers(conv))
	}
	switch {
	case err != nil:
		return res, fmt.Errorf("rebuild %s: commit: %w", conv, err)
	case done == commitStatusRaced:
		return res, fmt.Errorf("rebuild %s: %w", conv, ErrRaced)
	case done == commitStatusShortened:
		return res, fmt.Errorf("rebuild %s: the staged timeline lost entries (staging expired); run again", conv)
	}
	return res, s.restoreTag(ctx, src, conv)
}

func (s *Rebuilder) rebuildReadMeta(ctx context.Context, conv string) (rebuildMeta, error) {
	ctx, cancel := context.WithTimeout(ctx, s.cfg.CallTimeout)
	defer cancel()
	var fields *redis.SliceCmd
	var members, roles, held *redis.IntCmd
	_, err := s.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		fields = p.HMGet(ctx, s.keys.ConvMeta(conv), redisstore.MetaSeq, redisstore.MetaEpoch, redisstore.MetaFirst, redisstore.MetaType, redisstore.MetaLargeFrom)
		members = p.Exists(ctx, s.keys.Members(conv))
		roles = p.Exists(ctx, s.keys.Roles(conv))
		held = p.Exists(ctx, s.keys.Held(conv))
		return nil
	})
	if err != nil {
		return rebuildMeta{}, fmt.Errorf("rebuild %s: read meta: %w", conv, err)
	}
	v := fields.Val()
	return rebuildMeta{seq: hashString(v[0]), epoch: hashString(v[1]), first: hashString(v[2]),
		ctype: hashString(v[3]), lgs: hashString(v[4]), hasMembers: members.Val() == 1, hasRoles: roles.Val() == 1, held: held.Val() == 1}, nil
}

// replaysMembers says whether the rebuild replays the member set from the
// history (restoring the members, roles and former members, and the
// meta's nmem, mver and lgs together): when the store lost it; when it
// lost the meta, which counts it and says from which seq a group is large;
// or, for a group, when it lost the roles (a group with members always has
// an owner, so no roles hash beside a member set means it was evicted).
func (m rebuildMeta) replaysMembers(t schemas.ConvType) bool {
	return !m.hasMembers || m.seq == "" || (t == schemas.ConvType_CONV_TYPE_GROUP && !m.hasRoles)
}
