package harness

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/redis/go-redis/v9"
)

// KeyKind is the memory of one kind of key, e.g. "{c}:tl" (timelines) or
// "{u}:ib" (inbox hashes).
type KeyKind struct {
	Kind  string `json:"kind"`
	Keys  int    `json:"keys"`
	Bytes int64  `json:"bytes"`
	// Encodings counts the keys per Redis encoding (listpack, quicklist,
	// hashtable, ...): the encoding decides the cost per element.
	Encodings map[string]int `json:"encodings"`
}

// Census is the memory of every key under a prefix.
type Census struct {
	Keys  int       `json:"keys"`
	Bytes int64     `json:"bytes"`
	Kinds []KeyKind `json:"kinds"`
}

// KindOf names a key by its hash-tag type and suffix without ids:
// "P{c:g1}:dd:20000" → "{c}:dd", "P{u:alice}:cur:phone" → "{u}:cur".
func KindOf(prefix, key string) string {
	rest := strings.TrimPrefix(key, prefix)
	open, end := strings.IndexByte(rest, '{'), strings.IndexByte(rest, '}')
	if open < 0 || end < open {
		return "other"
	}
	tag, _, _ := strings.Cut(rest[open+1:end], ":")
	suffix := strings.TrimPrefix(rest[end+1:], ":")
	suffix, _, _ = strings.Cut(suffix, ":")
	return "{" + tag + "}:" + suffix
}

// MemoryCensus measures every key matching prefix* with MEMORY USAGE
// (all elements sampled) and groups them by KindOf. match, when set,
// narrows the keys counted (e.g. to one scenario's users and
// conversations); nil counts all.
func MemoryCensus(ctx context.Context, rdb *redis.Client, prefix string, match func(key string) bool) (Census, error) {
	var c Census
	kinds := map[string]*KeyKind{}
	iter := rdb.Scan(ctx, 0, escapeGlob(prefix)+"*", 1000).Iterator()
	var batch []string
	flush := func() error {
		if len(batch) == 0 {
			return nil
		}
		err := measureKeys(ctx, rdb, prefix, batch, kinds, &c)
		batch = batch[:0]
		return err
	}
	for iter.Next(ctx) {
		if k := iter.Val(); match == nil || match(k) {
			batch = append(batch, k)
		}
		if len(batch) == 500 {
			if err := flush(); err != nil {
				return c, err
			}
		}
	}
	if err := iter.Err(); err != nil {
		return c, fmt.Errorf("scan %s*: %w", prefix, err)
	}
	if err := flush(); err != nil {
		return c, err
	}
	for _, k := range kinds {
		c.Kinds = append(c.Kinds, *k)
	}
	sort.Slice(c.Kinds, func(i, j int) bool { return c.Kinds[i].Bytes > c.Kinds[j].Bytes })
	return c, nil
}

func measureKeys(ctx context.Context, rdb *redis.Client, prefix string, keys []string, kinds map[string]*KeyKind, c *Census) error {
	usage := make([]*redis.IntCmd, len(keys))
	enc := make([]*redis.StringCmd, len(keys))
	_, err := rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, k := range keys {
			usage[i] = p.MemoryUsage(ctx, k, 0)
			enc[i] = p.ObjectEncoding(ctx, k)
		}
		return nil
	})
	if err != nil && err != redis.Nil {
		return fmt.Errorf("memory usage: %w", err)
	}
	for i, k := range keys {
		n, err := usage[i].Result()
		if err == redis.Nil {
			continue // expired between SCAN and now
		}
		name := KindOf(prefix, k)
		kk := kinds[name]
		if kk == nil {
			kk = &KeyKind{Kind: name, Encodings: map[string]int{}}
			kinds[name] = kk
		}
		kk.Keys++
		kk.Bytes += n
		kk.Encodings[enc[i].Val()]++
		c.Keys++
		c.Bytes += n
	}
	return nil
}

func escapeGlob(s string) string {
	r := strings.NewReplacer(`\`, `\\`, "*", `\*`, "?", `\?`, "[", `\[`, "]", `\]`)
	return r.Replace(s)
}
