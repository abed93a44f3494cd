package readpath

import (
	"context"
	_ "embed"
	"errors"
	"fmt"

	"github.com/redis/go-redis/v9"

	"github.com/offlinebox/offlinebox/schemas"

	"github.com/offlinebox/offlinebox/redisstore"
)

var (
	//go:embed lua/sync_range.lua
	syncRangeLua    string
	syncRangeScript = redis.NewScript(syncRangeLua)
)

// ErrNotMember is returned when a user asks for a conversation they never
// were a member of (or that does not exist).
var ErrNotMember = errors.New("not a member of the conversation")

// rangeQuery asks for the seqs in (lo, hi) of one conversation.
type rangeQuery struct {
	conv     string
	lo, hi   uint64 // hi 0: no upper bound
	limit    int
	fromTop  bool // newest `limit` of the range rather than the oldest
	maxBytes int  // cut on raw entry bytes; 0: none
}

// timelineSlice is what sync_range.lua answered for one rangeQuery.
type timelineSlice struct {
	member bool // the user is or was a member
	// floor is one below the lowest seq of the range the user may read
	// (the join seq, for a member who never left).
	floor     uint64
	seq       uint64 // the conversation's max seq (a former member's last)
	epoch     uint64
	first     uint64 // seq of the timeline's head (seq+1 when empty)
	available int    // seqs of the range inside the window, returned or not
	entries   []*schemas.Sequenced
	rawBytes  int // of the entries as Redis sent them
}

// readSlices reads every query in one pipeline.
func (s *Reader) readSlices(ctx context.Context, user string, qs []rangeQuery) ([]timelineSlice, error) {
	calls := make([]redisstore.ScriptCall, len(qs))
	for i, q := range qs {
		top := 0
		if q.fromTop {
			top = 1
		}
		calls[i] = redisstore.ScriptCall{
			Keys: []string{s.keys.ConvMeta(q.conv), s.keys.Timeline(q.conv), s.keys.Members(q.conv), s.keys.PastMembers(q.conv)},
			Args: []any{user, q.lo, q.hi, q.limit, top, q.maxBytes},
		}
	}
	cmds, err := s.st.EvalPiped(ctx, syncRangeScript, calls)
	if err != nil {
		return nil, fmt.Errorf("read timelines for %s: %w", user, err)
	}
	out := make([]timelineSlice, len(qs))
	for i, c := range cmds {
		sl, err := parseSlice(c, qs[i].conv)
		if err != nil {
			return nil, fmt.Errorf("read timeline %s: %w", qs[i].conv, err)
		}
		if err := sl.checkContiguous(qs[i]); err != nil {
			return nil, fmt.Errorf("read timeline %s: %w", qs[i].conv, err)
		}
		out[i] = sl
	}
	return out, nil
}

func parseSlice(c *redis.Cmd, conv string) (timelineSlice, error) {
	var sl timelineSlice
	vals, err := c.Slice()
	if err != nil {
		return sl, err
	}
	if len(vals) == 0 {
		return sl, errors.New("empty script answer")
	}
	if n, _ := vals[0].(int64); n == 0 {
		return sl, nil
	}
	if len(vals) < 6 {
		return sl, fmt.Errorf("short script answer of %d values", len(vals))
	}
	sl.member = true
	sl.floor = redisstore.ReplyUint(vals[1])
	sl.seq = redisstore.ReplyUint(vals[2])
	sl.epoch = redisstore.ReplyUint(vals[3])
	sl.first = redisstore.ReplyUint(vals[4])
	sl.available = int(redisstore.ReplyUint(vals[5]))
	sl.entries = make([]*schemas.Sequenced, 0, len(vals)-6)
	for _, v := range vals[6:] {
		raw, _ := v.(string)
		sl.rawBytes += len(raw)
		e, err := redisstore.DecodeEntry([]byte(raw), conv, sl.epoch)
		if err != nil {
			return sl, err
		}
		sl.entries = append(sl.entries, e)
	}
	return sl, nil
}

// checkContiguous guards against a timeline whose entries do not sit where
// `first` says they do: returning them would hand the client wrong seqs.
func (sl timelineSlice) checkContiguous(q rangeQuery) error {
	for i := 1; i < len(sl.entries); i++ {
		if sl.entries[i].Seq != sl.entries[i-1].Seq+1 {
			return fmt.Errorf("entries %d and %d are not contiguous", sl.entries[i-1].Seq, sl.entries[i].Seq)
		}
	}
	if len(sl.entries) == 0 {
		return nil
	}
	lo, hi := sl.entries[0].Seq, sl.entries[len(sl.entries)-1].Seq
	if lo <= q.lo || (q.hi != 0 && hi >= q.hi) || hi > sl.seq || lo < sl.first {
		return fmt.Errorf("entries %d..%d outside the range asked (%d, %d) of max seq %d", lo, hi, q.lo, q.hi, sl.seq)
	}
	return nil
}

// PageQuery asks for one page of a conversation's messages inside the Redis
// window. With After set, the page holds the oldest messages above After;
// otherwise the newest messages below Before (or the newest of all).
type PageQuery struct {
	After    uint64
	HasAfter bool
	// Before is an exclusive upper bound; 0 for none.
	Before uint64
	Limit  int
	// Epoch, when not 0, must be the conversation's epoch (ErrEpochChanged
	// otherwise): seqs of another epoch name other messages.
	Epoch uint64
	// MaxBytes, when above 0, cuts the page (from its far end, keeping at
	// least one message) so that the raw entries stay within it.
	MaxBytes int
}

// Page is one page of messages, in ascending seq order.
type Page struct {
	Epoch   uint64
	MaxSeq  uint64
	First   uint64 // first seq still in the Redis window
	Joined  uint64 // one below the lowest seq of the range the user may read
	HasMore bool
	// Incomplete: part of the range asked for has left the Redis window; it
	// is only in history.
	Incomplete bool
	Messages   []*schemas.Sequenced
}

// ErrEpochChanged is returned when a request names an epoch that is not the
// conversation's: its timeline was rebuilt and the client must rebase.
var ErrEpochChanged = errors.New("conversation epoch changed")

// EpochError is a request's epoch that is not the conversation's: an
// older one (the timeline was rebuilt since) or one it never had. It
// matches ErrEpochChanged.
type EpochError struct {
	Asked, Current uint64
}

func (e *EpochError) Error() string {
	return fmt.Sprintf("epoch %d is not the conversation's epoch %d", e.Asked, e.Current)
}

// Is matches ErrEpochChanged.
func (e *EpochError) Is(target error) bool { return target == ErrEpochChanged }

// ReadPage reads one page of the conversation for user.
func (s *Reader) ReadPage(ctx context.Context, user, conv string, q PageQuery) (Page, error) {
	if q.Limit < 1 {
		return Page{}, fmt.Errorf("read page of %s: limit %d is below 1", conv, q.Limit)
	}
	ctx, cancel := context.WithTimeout(ctx, s.cfg.CallTimeout)
	defer cancel()
	rq := rangeQuery{conv: conv, lo: q.After, hi: q.Before, limit: q.Limit, fromTop: !q.HasAfter, maxBytes: q.MaxBytes}
	if !q.HasAfter {
		rq.lo = 0
	}
	sls, err := s.readSlices(ctx, user, []rangeQuery{rq})
	if err != nil {
		return Page{}, err
	}
	sl := sls[0]
	if !sl.member {
		return Page{}, fmt.Errorf("read page of %s: %w", conv, ErrNotMember)
	}
	if q.Epoch != 0 && q.Epoch != sl.epoch {
		return Page{}, fmt.Errorf("read page of %s: %w", conv, &EpochError{Asked: q.Epoch, Current: sl.epoch})
	}
	return Page{
		Epoch: sl.epoch, MaxSeq: sl.seq, First: sl.first, Joined: sl.floor,
		HasMore:    sl.available > len(sl.entries),
		Incomplete: max(rq.lo, sl.floor)+1 < sl.first,
		Messages:   sl.entries,
	}, nil
}
