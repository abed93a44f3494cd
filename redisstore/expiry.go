package redisstore

import (
	"bytes"
	"context"
	_ "embed"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/offlinebox/offlinebox/schemas"
)

var (
	//go:embed lua/expiry_pop_timeline.lua
	expiryPopTimelineLua    string
	expiryPopTimelineScript = redis.NewScript(expiryPopTimelineLua)

	//go:embed lua/expiry_trim_zset.lua
	expiryTrimZsetLua    string
	expiryTrimZsetScript = redis.NewScript(expiryTrimZsetLua)

	//go:embed lua/expiry_trim_mentions.lua
	expiryTrimMentionsLua    string
	expiryTrimMentionsScript = redis.NewScript(expiryTrimMentionsLua)

	//go:embed lua/expiry_evict_devices.lua
	expiryEvictDevicesLua    string
	expiryEvictDevicesScript = redis.NewScript(expiryEvictDevicesLua)
)

// ErrMalformed marks a key whose content does not follow the data model;
// expiry leaves it as it is (the checker reports it) rather than stopping.
var ErrMalformed = errors.New("malformed data")

// ConvExpiry counts what one ExpireConversation call removed.
type ConvExpiry struct {
	// Timeline entries popped from the head.
	Timeline int
	// MentionAll references of a large group dropped.
	MentionAll int
}

// ExpireConversation removes, in one bounded step, the conversation's
// timeline entries past their window (at most max, from the head) and its
// @all references past the window of its type (at most max). Calling it
// again continues where it stopped; a call with nothing to do costs one
// round trip. Several processes may call it at once: each removal is
// guarded by the state it was planned on.
func (s *Store) ExpireConversation(ctx context.Context, conv string, now time.Time, r Retention, max int) (ConvExpiry, error) {
	return s.ExpireConversationFor(ctx, conv, now, func(ConvRetention) Retention { return r }, max)
}

// ExpireConversationFor is ExpireConversation with the retention chosen by
// the conversation's type and tag, read in the same round trip as its head.
func (s *Store) ExpireConversationFor(ctx context.Context, conv string, now time.Time, pick RetentionFor, max int) (ConvExpiry, error) {
	var out ConvExpiry
	if max < 1 {
		return out, fmt.Errorf("expire conversation %s: max %d is below 1", conv, max)
	}
	ctx, cancel := context.WithTimeout(ctx, s.cfg.CallTimeout)
	defer cancel()
	meta, tl, ma := s.keys.ConvMeta(conv), s.keys.Timeline(conv), s.keys.MentionAll(conv)
	var fields *redis.SliceCmd
	var head *redis.StringSliceCmd
	var oldest *redis.ZSliceCmd
	_, err := s.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		fields = p.HMGet(ctx, meta, MetaEpoch, MetaFirst, MetaType, MetaTag)
		head = p.LRange(ctx, tl, 0, 0)
		oldest = p.ZRangeWithScores(ctx, ma, 0, 0)
		return nil
	})
	if err != nil {
		return out, fmt.Errorf("expire conversation %s: read head: %w", conv, err)
	}
	vals := fields.Val()
	epoch, first := hashString(vals[0]), hashString(vals[1])
	ctype := ConvTypeOfCode(hashString(vals[2]))
	r := pick(ConvRetention{Conv: conv, Type: ctype, Tag: hashString(vals[3])})
	if len(head.Val()) == 1 {
		latest := now.Add(-r.shortestWindow(ctype)).UnixMilli()
		if _, wt, err := entryPrefix([]byte(head.Val()[0])); err != nil {
			return out, fmt.Errorf("expire conversation %s: %w: %w", conv, ErrMalformed, err)
		} else if wt < latest {
			if out.Timeline, err = s.popExpired(ctx, conv, epoch, first, ctype, now, r, max); err != nil {
				return out, err
			}
		}
	}
	cutoff := now.Add(-r.TypeWindow(ctype)).UnixMilli()
	if z := oldest.Val(); len(z) == 1 && int64(z[0].Score) < cutoff {
		n, err := expiryTrimZsetScript.Run(ctx, s.rdb, []string{ma}, cutoff, max).Int()
		if err != nil {
			return out, fmt.Errorf("expire @all references of %s: %w", conv, err)
		}
		out.MentionAll = n
	}
	return out, nil
}

// popExpired reads up to max head entries, counts how many in a row are
// past their own window, and removes that many if the head is unchanged.
func (s *Store) popExpired(ctx context.Context, conv, epoch, first string, ctype schemas.ConvType, now time.Time, r Retention, max int) (int, error) {
	f, err := strconv.ParseUint(first, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("expire conversation %s: meta first %q: %w: %w", conv, first, ErrMalformed, err)
	}
	raw, err := s.rdb.LRange(ctx, s.keys.Timeline(conv), 0, int64(max)-1).Result()
	if err != nil {
		return 0, fmt.Errorf("expire conversation %s: read entries: %w", conv, err)
	}
	n := 0
	for i, e := range raw {
		ent, err := DecodeEntry([]byte(e), conv, 0)
		if err != nil {
			return 0, fmt.Errorf("expire conversation %s: %w: %w", conv, ErrMalformed, err)
		}
		msg := ent.GetMessage()
		if ent.Seq != f+uint64(i) || !r.MessageExpired(ctype, msg.GetKind(), msg.GetContentType(), ent.WriteTimeMs, now) {
			break
		}
		n++
	}
	if n == 0 {
		return 0, nil
	}
	latest := now.Add(-r.shortestWindow(ctype)).UnixMilli()
	popped, err := expiryPopTimelineScript.Run(ctx, s.rdb,
		[]string{s.keys.ConvMeta(conv), s.keys.Timeline(conv), s.keys.Notices(conv)}, epoch, first, n, latest).Int()
	if err != nil {
		return 0, fmt.Errorf("expire conversation %s: pop %d entries: %w", conv, n, err)
	}
	return popped, nil
}

// ExpireDedupe deletes the conversation's dedupe keys of the given day
// (every bucket, and the exact map) once sequencing no longer consults
// them: at the same instant their Redis expiry falls due (the end of the day
// plus the dedupe window in whole days), but by the caller's clock, so keys
// whose expiry was lost go too. It reports whether bucket 0 went; the
// other keys are found through it.
func (s *Store) ExpireDedupe(ctx context.Context, conv string, day int64, now time.Time) (bool, error) {
	if day+1+s.DedupeDays() > DayOf(now.UnixMilli()) {
		return false, nil
	}
	keys, err := s.dedupeDayKeys(ctx, conv, day)
	if err != nil {
		return false, fmt.Errorf("expire dedupe %s day %d: %w", conv, day, err)
	}
	ctx, cancel := context.WithTimeout(ctx, s.cfg.CallTimeout)
	defer cancel()
	// UNLINK: a busy conversation's day can hold many thousands of ids;
	// freeing them must not block the server. Bucket 0 goes last: until
	// then it names the others, should this stop half-way.
	if len(keys) > 1 {
		if err := s.rdb.Unlink(ctx, keys[1:]...).Err(); err != nil {
			return false, fmt.Errorf("expire dedupe %s day %d: %w", conv, day, err)
		}
	}
	n, err := s.rdb.Unlink(ctx, keys[0]).Result()
	if err != nil {
		return false, fmt.Errorf("expire dedupe %s day %d: %w", conv, day, err)
	}
	return n > 0, nil
}

// ExpireMentions removes from the user's @mention lane the references past
// the window of their conversation's type, examining at most max per round
// trip, until none is left. It returns how many went.
func (s *Store) ExpireMentions(ctx context.Context, user string, now time.Time, r Retention, max int) (int, error) {
	if max < 1 {
		return 0, fmt.Errorf("expire mentions of %s: max %d is below 1", user, max)
	}
	cd := now.Add(-r.TypeWindow(schemas.ConvType_CONV_TYPE_DIRECT)).UnixMilli()
	cg := now.Add(-r.TypeWindow(schemas.ConvType_CONV_TYPE_GROUP)).UnixMilli()
	keys := []string{s.keys.Mentions(user), s.keys.Inbox(user), s.keys.MentionIndex(user)}
	total, offset := 0, 0
	for {
		callCtx, cancel := context.WithTimeout(ctx, s.cfg.CallTimeout)
		res, err := expiryTrimMentionsScript.Run(callCtx, s.rdb, keys, cd, cg, max, offset).Int64Slice()
		cancel()
		if err != nil {
			return total, fmt.Errorf("expire mentions of %s: %w", user, err)
		}
		if len(res) != 2 {
			return total, fmt.Errorf("expire mentions of %s: script answered %v", user, res)
		}
		removed, examined := int(res[0]), int(res[1])
		total += removed
		// References kept (younger than their own type's window) stay in
		// front of the range; skip them next time.
		offset += examined - removed
		if examined < max {
			return total, nil
		}
	}
}

// EvictDevices evicts the user's devices unused since idleBefore and, above
// the configured MaxDevices, the least recently used ones; at most max per
// call. Each evicted device loses its cursor and joins the evicted set.
func (s *Store) EvictDevices(ctx context.Context, user string, idleBefore time.Time, max int) (int, error) {
	if max < 1 {
		return 0, fmt.Errorf("evict devices of %s: max %d is below 1", user, max)
	}
	ctx, cancel := context.WithTimeout(ctx, s.cfg.CallTimeout)
	defer cancel()
	var n int
	err := s.withDeviceSet(ctx, user, int64(max), func(devs, cursors []string) error {
		args := make([]any, 0, 4+len(devs))
		args = append(args, s.cfg.MaxDevices, idleBefore.UnixMilli(), max, len(devs))
		for _, d := range devs {
			args = append(args, d)
		}
		var err error
		n, err = expiryEvictDevicesScript.Run(ctx, s.rdb, append([]string{s.keys.Devices(user), s.keys.Evicted(user)}, cursors...), args...).Int()
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("evict devices of %s: %w", user, err)
	}
	return n, nil
}

// entryPrefix parses the "SEQ:WRITE_MS:" prefix of a timeline entry.
func entryPrefix(raw []byte) (seq uint64, writeMS int64, err error) {
	a := bytes.IndexByte(raw, ':')
	if a < 0 {
		return 0, 0, errors.New("timeline entry without seq")
	}
	b := bytes.IndexByte(raw[a+1:], ':')
	if b < 0 {
		return 0, 0, errors.New("timeline entry without write time")
	}
	if seq, err = strconv.ParseUint(string(raw[:a]), 10, 64); err != nil {
		return 0, 0, fmt.Errorf("timeline entry seq: %w", err)
	}
	if writeMS, err = strconv.ParseInt(string(raw[a+1:a+1+b]), 10, 64); err != nil {
		return 0, 0, fmt.Errorf("timeline entry %d write time: %w", seq, err)
	}
	return seq, writeMS, nil
}

// hashString turns one HMGET answer into a string ("" when absent).
func hashString(v any) string {
	s, _ := v.(string)
	return s
}
