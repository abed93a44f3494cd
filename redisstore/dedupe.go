package redisstore

import (
	"context"
	"crypto/sha256"
	_ "embed"
	"fmt"
	"strconv"

	"github.com/redis/go-redis/v9"
)

// The dedupe buckets map an 8-byte digest of each client_msg_id to its seq,
// per conversation and day, spread over as many small hashes as keep Redis's
// listpack encoding (see lua/dedupe_lib.lua and schemas/redis-keys.md): a
// full id in a hashtable costs several times more.
var (
	//go:embed lua/dedupe_lib.lua
	dedupeLibLua string

	//go:embed lua/dedupe_restore.lua
	dedupeRestoreLua    string
	dedupeRestoreScript = redis.NewScript(dedupeLibLua + dedupeRestoreLua)
)

// DedupeDigestBytes is the size of a client_msg_id's digest.
const DedupeDigestBytes = 8

// dedupeDigest is the key of a client_msg_id in the dedupe buckets: the
// first bytes of its SHA-256. A digest two ids share is resolved against
// the timeline (see lua/sequence.lua), so it never merges two messages.
func dedupeDigest(cmid string) string {
	sum := sha256.Sum256([]byte(cmid))
	return string(sum[:DedupeDigestBytes])
}

// dedupeExpireAt is when every dedupe key of a day expires (unix seconds):
// once the dedupe window, in whole days, has passed after the day ended.
func (s *Store) dedupeExpireAt(day int64) int64 { return (day + 1 + s.DedupeDays()) * 86_400 }

// Linear hashing of the dedupe buckets, as lua/dedupe_lib.lua does it.
const (
	dedupeLoad       = 32
	dedupeMaxBuckets = 65536
	// dedupeTries bounds how often a script is run again because a day's
	// buckets changed between the caller's read and the script (OBDEDUPE).
	dedupeTries = 3
)

// dedupeDay is what bucket 0 of a day says about the day.
type dedupeDay struct {
	day   int64
	n, c  int  // buckets, digests held
	exact bool // the exact map exists
}

// empty reports whether bucket 0 named nothing of the day: no ids, no
// other buckets, no exact map (as when the day's keys do not exist).
func (d dedupeDay) empty() bool { return d.n == 1 && d.c == 0 && !d.exact }

// readDedupeDays reads the state of the given days of conv, in one pipeline.
func (s *Store) readDedupeDays(ctx context.Context, conv string, days []int64) ([]dedupeDay, error) {
	cmds := make([]*redis.SliceCmd, len(days))
	_, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, d := range days {
			cmds[i] = p.HMGet(ctx, s.keys.Dedupe(conv, d), "n", "c", "x")
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read dedupe days of %s: %w", conv, err)
	}
	out := make([]dedupeDay, len(days))
	for i, d := range days {
		v := cmds[i].Val()
		out[i] = dedupeDay{day: d, n: 1, exact: hashString(v[2]) == "1"}
		if n, err := strconv.Atoi(hashString(v[0])); err == nil {
			out[i].n = n
		}
		out[i].c, _ = strconv.Atoi(hashString(v[1]))
	}
	return out, nil
}

// dedupeKeys lists the keys of a day beyond bucket 0 that looking up the
// digests and, when adds, adding them (with every split that may follow)
// can touch: the scripts must be given them in KEYS. dd_missing in
// lua/dedupe_lib.lua checks the same list against the day as it is then.
func dedupeKeys(k Keys, conv string, d dedupeDay, digs []string, adds bool) []string {
	seen := map[int]bool{0: true}
	var out []string
	add := func(b int) {
		if !seen[b] {
			seen[b] = true
			out = append(out, k.DedupeBucket(conv, d.day, b))
		}
	}
	top := d.n
	if adds {
		for d.c+len(digs) > dedupeLoad*top && top < dedupeMaxBuckets {
			top++
		}
	}
	for n := d.n; n <= top; n++ {
		for _, dig := range digs {
			add(dedupeAddr(dedupeHash(dig), n))
		}
		if n < top {
			add(n - dedupeLow(n))
			add(n)
		}
	}
	if adds || d.exact {
		out = append(out, k.DedupeExact(conv, d.day))
	}
	return out
}

// dedupeHash is the 24 bits of a digest that address its bucket.
func dedupeHash(dig string) int {
	return int(dig[0])<<16 | int(dig[1])<<8 | int(dig[2])
}

// dedupeLow is the largest power of two not above n.
func dedupeLow(n int) int {
	lo := 1
	for lo*2 <= n {
		lo *= 2
	}
	return lo
}

// dedupeAddr is the bucket of hash h among n buckets.
func dedupeAddr(h, n int) int {
	lo := dedupeLow(n)
	if b := h % (lo * 2); b < n {
		return b
	}
	return h % lo
}

// DedupeRestore is one client_msg_id to put back in its day's buckets.
type DedupeRestore struct {
	Day  int64
	Cmid string
	Seq  uint64
}

// RestoreDedupe puts ids back in their days' buckets without overwriting
// what is there (see lua/dedupe_restore.lua); it returns how many it added.
func (s *Store) RestoreDedupe(ctx context.Context, conv string, ids []DedupeRestore) (int, error) {
	if len(ids) == 0 {
		return 0, nil
	}
	index := map[int64]int{}
	var days []int64
	var at []any
	digs := map[int64][]string{}
	for _, d := range ids {
		if _, ok := index[d.Day]; !ok {
			index[d.Day] = len(days) + 1
			days = append(days, d.Day)
			at = append(at, s.dedupeExpireAt(d.Day))
		}
		digs[d.Day] = append(digs[d.Day], s.digest(d.Cmid))
	}
	args := make([]any, 0, 1+len(at)+4*len(ids))
	args = append(args, len(days))
	args = append(args, at...)
	for _, d := range ids {
		args = append(args, index[d.Day], s.digest(d.Cmid), d.Cmid, d.Seq)
	}
	ctx, cancel := context.WithTimeout(ctx, s.cfg.CallTimeout)
	defer cancel()
	var n int
	var err error
	for range dedupeTries {
		var state []dedupeDay
		if state, err = s.readDedupeDays(ctx, conv, days); err != nil {
			return 0, fmt.Errorf("restore %d dedupe ids of %s: %w", len(ids), conv, err)
		}
		keys := make([]string, 0, 2*len(days))
		for _, d := range days {
			keys = append(keys, s.keys.Dedupe(conv, d))
		}
		for _, st := range state {
			keys = append(keys, dedupeKeys(s.keys, conv, st, digs[st.day], true)...)
		}
		if n, err = dedupeRestoreScript.Run(ctx, s.rdb, keys, args...).Int(); !redis.HasErrorPrefix(err, refusalDedupe) {
			break
		}
	}
	if err != nil {
		return 0, fmt.Errorf("restore %d dedupe ids of %s: %w", len(ids), conv, err)
	}
	return n, nil
}

// dedupeDayKeys lists every key of a day's dedupe buckets that exists, as
// bucket 0 describes them.
func (s *Store) dedupeDayKeys(ctx context.Context, conv string, day int64) ([]string, error) {
	ctx, cancel := context.WithTimeout(ctx, s.cfg.CallTimeout)
	defer cancel()
	v, err := s.rdb.HMGet(ctx, s.keys.Dedupe(conv, day), "n", "x").Result()
	if err != nil {
		return nil, err
	}
	n, _ := strconv.Atoi(hashString(v[0]))
	keys := []string{s.keys.Dedupe(conv, day)}
	for b := 1; b < n; b++ {
		keys = append(keys, s.keys.DedupeBucket(conv, day, b))
	}
	if hashString(v[1]) == "1" {
		keys = append(keys, s.keys.DedupeExact(conv, day))
	}
	return keys, nil
}
