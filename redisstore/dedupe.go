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

// DedupeBucket is bucket b of a day's dedupe digests; bucket 0 is Dedupe.
func (k Keys) DedupeBucket(conv string, day int64, b int) string {
	if b == 0 {
		return k.Dedupe(conv, day)
	}
	return k.Dedupe(conv, day) + ":" + strconv.Itoa(b)
}

// DedupeExact maps in full the client_msg_ids of a day whose digest the
// day already held for another id.
func (k Keys) DedupeExact(conv string, day int64) string { return k.Dedupe(conv, day) + ":x" }

// dedupeExpireAt is when every dedupe key of a day expires (unix seconds):
// once the dedupe window, in whole days, has passed after the day ended.
func (s *Store) dedupeExpireAt(day int64) int64 { return (day + 1 + s.dedupeDays()) * 86_400 }

// dedupeRestore is one client_msg_id to put back in its day's buckets.
type dedupeRestore struct {
	day  int64
	cmid string
	seq  uint64
}

// restoreDedupe puts ids back in their days' buckets without overwriting
// what is there (see lua/dedupe_restore.lua); it returns how many it added.
func (s *Store) restoreDedupe(ctx context.Context, conv string, ids []dedupeRestore) (int, error) {
	if len(ids) == 0 {
		return 0, nil
	}
	index := map[int64]int{}
	var keys []string
	var at []any
	for _, d := range ids {
		if _, ok := index[d.day]; !ok {
			index[d.day] = len(keys) + 1
			keys = append(keys, s.keys.Dedupe(conv, d.day))
			at = append(at, s.dedupeExpireAt(d.day))
		}
	}
	args := make([]any, 0, 1+len(at)+4*len(ids))
	args = append(args, len(keys))
	args = append(args, at...)
	for _, d := range ids {
		args = append(args, index[d.day], s.digest(d.cmid), d.cmid, d.seq)
	}
	ctx, cancel := context.WithTimeout(ctx, s.cfg.CallTimeout)
	defer cancel()
	n, err := dedupeRestoreScript.Run(ctx, s.rdb, keys, args...).Int()
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
