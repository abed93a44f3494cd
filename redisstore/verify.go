package redisstore

import (
	"context"
	_ "embed"
	"fmt"
	"sort"
	"strconv"

	"github.com/redis/go-redis/v9"

	"github.com/offlinebox/offlinebox/schemas"
)

var (
	//go:embed lua/verify_timeline.lua
	verifyTimelineLua    string
	verifyTimelineScript = redis.NewScript(verifyTimelineLua)

	//go:embed lua/verify_entries.lua
	verifyEntriesLua    string
	verifyEntriesScript = redis.NewScript(verifyEntriesLua)
)

// TimelineCheck is what CheckTimeline found in one chunk of a timeline.
type TimelineCheck struct {
	// Seq, First and Epoch are the meta's; Len the list's length.
	Seq, First, Epoch uint64
	Len               int64
	// Next is the seq the next chunk starts from (Seq+1: done).
	Next uint64
	// Problem describes what is wrong ("" when the chunk is sound), at
	// BadSeq.
	Problem string
	BadSeq  uint64
}

// CheckTimeline checks up to count entries of a conversation's timeline
// from seq from, in one consistent read: the list holds exactly the seqs
// first..seq, each entry carrying its own seq and a body. Checking chunk
// after chunk stays correct while expiry raises the floor and sequencing
// appends.
func (s *Store) CheckTimeline(ctx context.Context, conv string, from uint64, count int) (TimelineCheck, error) {
	ctx, cancel := context.WithTimeout(ctx, s.cfg.CallTimeout)
	defer cancel()
	res, err := verifyTimelineScript.Run(ctx, s.rdb, []string{s.keys.ConvMeta(conv), s.keys.Timeline(conv)},
		from, count).StringSlice()
	if err != nil {
		return TimelineCheck{}, fmt.Errorf("check timeline %s: %w", conv, err)
	}
	if len(res) != 7 {
		return TimelineCheck{}, fmt.Errorf("check timeline %s: script answered %q", conv, res)
	}
	var c TimelineCheck
	c.Seq, _ = strconv.ParseUint(res[0], 10, 64)
	c.First, _ = strconv.ParseUint(res[1], 10, 64)
	c.Len, _ = strconv.ParseInt(res[2], 10, 64)
	c.Epoch, _ = strconv.ParseUint(res[3], 10, 64)
	c.Next, _ = strconv.ParseUint(res[4], 10, 64)
	c.BadSeq, _ = strconv.ParseUint(res[5], 10, 64)
	c.Problem = res[6]
	return c, nil
}

// ConvHead is the part of a conversation's meta the checker compares
// user state against.
type ConvHead struct {
	Exists            bool
	Seq, First, Epoch uint64
	Type              schemas.ConvType
	// Members is the member hash's size and NMem the meta's count of it.
	Members, NMem int64
	// Large: the meta's `large` flag (read by ConvHeads only).
	Large bool
}

// NoticesIn counts the join and leave seqs s of a group with lo < s <= hi
// the notice set holds (the ones a large group's unread leaves out).
func (s *Store) NoticesIn(ctx context.Context, conv string, lo, hi uint64) (uint64, error) {
	ctx, cancel := context.WithTimeout(ctx, s.cfg.CallTimeout)
	defer cancel()
	n, err := s.rdb.ZCount(ctx, s.keys.Notices(conv), strconv.FormatUint(lo+1, 10), strconv.FormatUint(hi, 10)).Result()
	if err != nil {
		return 0, fmt.Errorf("count the notices of %s in %d..%d: %w", conv, lo+1, hi, err)
	}
	return uint64(n), nil
}

// ConvHeads reads the heads of several conversations in one round trip.
// When the only failures are heads that can never be read (a key of the
// wrong type), it returns the others with ItemErrors naming those, by
// their index in convs.
func (s *Store) ConvHeads(ctx context.Context, convs []string) (map[string]ConvHead, error) {
	ctx, cancel := context.WithTimeout(ctx, s.cfg.CallTimeout)
	defer cancel()
	metas := make([]*redis.SliceCmd, len(convs))
	mems := make([]*redis.IntCmd, len(convs))
	_, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, c := range convs {
			metas[i] = p.HMGet(ctx, s.keys.ConvMeta(c), MetaSeq, MetaFirst, MetaEpoch, MetaType, MetaMemberCount, MetaLarge)
			mems[i] = p.HLen(ctx, s.keys.Members(c))
		}
		return nil
	})
	broken := ItemErrors{}
	if err != nil {
		for i := range convs {
			for _, cmd := range []redis.Cmder{metas[i], mems[i]} {
				switch e := cmd.Err(); {
				case e == nil:
				case Permanent(e):
					broken.add(i, fmt.Errorf("read the head of %s: %w", convs[i], e))
				default:
					return nil, fmt.Errorf("read %d conversation heads: %w", len(convs), e)
				}
			}
		}
		if len(broken) == 0 {
			return nil, fmt.Errorf("read %d conversation heads: %w", len(convs), err)
		}
	}
	out := make(map[string]ConvHead, len(convs))
	for i, c := range convs {
		if broken[i] != nil {
			continue
		}
		v := metas[i].Val()
		h := ConvHead{Exists: v[0] != nil, Type: ConvTypeOfCode(hashString(v[3])), Members: mems[i].Val()}
		h.Seq, _ = strconv.ParseUint(hashString(v[0]), 10, 64)
		h.First, _ = strconv.ParseUint(hashString(v[1]), 10, 64)
		h.Epoch, _ = strconv.ParseUint(hashString(v[2]), 10, 64)
		h.NMem, _ = strconv.ParseInt(hashString(v[4]), 10, 64)
		h.Large = hashString(v[5]) == "1"
		out[c] = h
	}
	if len(broken) > 0 {
		return out, broken
	}
	return out, nil
}

// TimelineEntries returns the entries with from <= seq <= to still in the
// timeline (those below the floor are gone), decoded, with the meta they
// were read with, in one consistent read.
func (s *Store) TimelineEntries(ctx context.Context, conv string, from, to uint64) (ConvHead, []*schemas.Sequenced, error) {
	var head ConvHead
	ctx, cancel := context.WithTimeout(ctx, s.cfg.CallTimeout)
	defer cancel()
	res, err := verifyEntriesScript.Run(ctx, s.rdb, []string{s.keys.ConvMeta(conv), s.keys.Timeline(conv)}, from, to).StringSlice()
	if err != nil {
		return head, nil, fmt.Errorf("read timeline %s %d..%d: %w", conv, from, to, err)
	}
	if len(res) < 3 {
		return head, nil, fmt.Errorf("read timeline %s: script answered %d values", conv, len(res))
	}
	head.Exists = res[0] != ""
	head.Seq, _ = strconv.ParseUint(res[0], 10, 64)
	head.First, _ = strconv.ParseUint(res[1], 10, 64)
	head.Epoch, _ = strconv.ParseUint(res[2], 10, 64)
	out := make([]*schemas.Sequenced, 0, len(res)-3)
	for _, r := range res[3:] {
		e, err := DecodeEntry([]byte(r), conv, head.Epoch)
		if err != nil {
			return head, nil, fmt.Errorf("read timeline %s: %w", conv, err)
		}
		out = append(out, e)
	}
	return head, out, nil
}

// ReadMentionAll reads a large group's @all references (seqs).
func (s *Store) ReadMentionAll(ctx context.Context, conv string) ([]uint64, error) {
	ctx, cancel := context.WithTimeout(ctx, s.cfg.CallTimeout)
	defer cancel()
	raw, err := s.rdb.ZRange(ctx, s.keys.MentionAll(conv), 0, -1).Result()
	if err != nil {
		return nil, fmt.Errorf("read @all references of %s: %w", conv, err)
	}
	out := make([]uint64, 0, len(raw))
	for _, r := range raw {
		n, err := strconv.ParseUint(r, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("read @all references of %s: member %q: %w", conv, r, err)
		}
		out = append(out, n)
	}
	return out, nil
}

// GroupRoles reads a group's roles (member → o or a) and which of their
// holders are members, in one round trip each.
func (s *Store) GroupRoles(ctx context.Context, conv string) (roles map[string]string, strangers []string, err error) {
	ctx, cancel := context.WithTimeout(ctx, s.cfg.CallTimeout)
	defer cancel()
	if roles, err = s.rdb.HGetAll(ctx, s.keys.Roles(conv)).Result(); err != nil {
		return nil, nil, fmt.Errorf("read roles of %s: %w", conv, err)
	}
	if len(roles) == 0 {
		return roles, nil, nil
	}
	holders := make([]string, 0, len(roles))
	for u := range roles {
		holders = append(holders, u)
	}
	sort.Strings(holders)
	in, err := s.rdb.HMGet(ctx, s.keys.Members(conv), holders...).Result()
	if err != nil {
		return nil, nil, fmt.Errorf("read role holders of %s: %w", conv, err)
	}
	for i, v := range in {
		if v == nil {
			strangers = append(strangers, holders[i])
		}
	}
	return roles, strangers, nil
}
