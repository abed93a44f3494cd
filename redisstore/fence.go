package redisstore

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/redis/go-redis/v9"

	"github.com/offlinebox/offlinebox/schemas"
)

// The instance fence (lua/fence_lib.lua): the scripts of the sequencing
// path run only on redis-server instances their writer verified against
// the changelog, so a server that came back without its last writes is
// restored before anything is sequenced there again.
var (
	//go:embed lua/fence_lib.lua
	fenceLibLua string

	//go:embed lua/restore_fence.lua
	restoreFenceLua    string
	restoreFenceScript = redis.NewScript(fenceLibLua + restoreFenceLua)

	//go:embed lua/restore_seed.lua
	restoreSeedLua    string
	restoreSeedScript = redis.NewScript(fenceLibLua + restoreSeedLua)

	//go:embed lua/mark_large.lua
	markLargeLua    string
	markLargeScript = redis.NewScript(fenceLibLua + markLargeLua)
)

// ErrFenced is the error of a write refused because it reached a server
// instance (run_id) the Fence has not verified: the server restarted or
// failed over, and may have lost its last writes.
var ErrFenced = errors.New("redis instance not verified against the changelog")

// Fence is the set of server instances (run_ids) a writer has verified.
// A Store configured with a Fence passes it to every script of the
// sequencing path; a Store without one runs them unfenced. Safe for
// concurrent use; share one Fence among the stores of one writer.
type Fence struct {
	arg atomic.Pointer[string]
	mu  sync.Mutex
	ids []string
}

// NewFence returns a fence that has verified no instance yet: every
// fenced write is refused until Verify names its server.
func NewFence() *Fence {
	f := &Fence{}
	f.Verify(nil)
	return f
}

// Verify replaces the verified instances with ids.
func (f *Fence) Verify(ids []string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.ids = slices.Clone(ids)
	slices.Sort(f.ids)
	arg := "," + strings.Join(f.ids, ",") + ","
	f.arg.Store(&arg)
}

// Verified returns the verified instances, sorted.
func (f *Fence) Verified() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.ids)
}

// fenceArg is the last argument of a fenced script: the verified run_ids
// between commas, or "" for an unfenced store.
func (s *Store) fenceArg() string {
	if s.cfg.Fence == nil {
		return ""
	}
	return *s.cfg.Fence.arg.Load()
}

// Instance is one redis-server process: its address and run_id.
type Instance struct {
	Addr  string
	RunID string
	// Evicts is the server's maxmemory-policy when it may evict keys to
	// stay under its maxmemory ("" when it never does: noeviction, or no
	// maxmemory). Every policy but noeviction may drop a key this store
	// keeps state in (even volatile-*: the dedupe days expire), so a
	// writer must not trust such a server.
	Evicts string
	// EvictedKeys is INFO's evicted_keys: the keys the server dropped for
	// memory since it started (or CONFIG RESETSTAT). One that rose since a
	// writer verified the server means state is gone (EvictionsSeen).
	EvictedKeys int64
}

// Instances returns the run_id of every server the store writes to: the
// server, or every master of a cluster, and whether it may evict keys.
func (s *Store) Instances(ctx context.Context) ([]Instance, error) {
	ctx, cancel := context.WithTimeout(ctx, s.cfg.CallTimeout)
	defer cancel()
	one := func(ctx context.Context, c *redis.Client) (Instance, error) {
		// The default sections hold both server and memory; INFO with two
		// sections named needs Redis 7.
		info, err := c.Info(ctx).Result()
		if err != nil {
			return Instance{}, fmt.Errorf("run_id of %s: %w", c.Options().Addr, err)
		}
		id := infoField(info, "run_id")
		if id == "" {
			return Instance{}, fmt.Errorf("run_id of %s: INFO server names none", c.Options().Addr)
		}
		in := Instance{Addr: c.Options().Addr, RunID: id}
		if n, err := strconv.ParseInt(infoField(info, "evicted_keys"), 10, 64); err == nil {
			in.EvictedKeys = n
		}
		if policy := infoField(info, "maxmemory_policy"); policy != "noeviction" && infoField(info, "maxmemory") != "0" {
			in.Evicts = policy
		}
		return in, nil
	}
	switch c := s.rdb.(type) {
	case *redis.Client:
		in, err := one(ctx, c)
		if err != nil {
			return nil, err
		}
		return []Instance{in}, nil
	case *redis.ClusterClient:
		var mu sync.Mutex
		var out []Instance
		err := c.ForEachMaster(ctx, func(ctx context.Context, m *redis.Client) error {
			in, err := one(ctx, m)
			mu.Lock()
			out = append(out, in)
			mu.Unlock()
			return err
		})
		if err != nil {
			return nil, err
		}
		slices.SortFunc(out, func(a, b Instance) int { return strings.Compare(a.Addr, b.Addr) })
		return out, nil
	}
	return nil, fmt.Errorf("run_ids: unsupported client %T", s.rdb)
}

func infoField(info, name string) string {
	for _, line := range strings.Split(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), name+":"); ok {
			return v
		}
	}
	return ""
}

// RaiseFence raises the "applied up to" fence of the changelog on every
// server of the store: next[p] is the offset of partition p below which
// every record's effects were acknowledged by the store's servers. It only
// raises. Refused with ErrFenced on an instance the store's Fence has not
// verified.
func (s *Store) RaiseFence(ctx context.Context, next map[int32]int64) error {
	if len(next) == 0 {
		return nil
	}
	args := make([]any, 0, 2*len(next)+1)
	for p, off := range next {
		args = append(args, p, off)
	}
	args = append(args, s.fenceArg())
	ctx, cancel := context.WithTimeout(ctx, s.cfg.CallTimeout)
	defer cancel()
	keys, err := s.fenceKeys(ctx, false)
	if err != nil {
		return err
	}
	for _, k := range keys {
		if err := restoreFenceScript.Run(ctx, s.rdb, []string{k}, args...).Err(); err != nil {
			return fmt.Errorf("raise the changelog fence %s: %w", k, fenced(err))
		}
	}
	return nil
}

// AppliedFence reads the changelog fence: per partition, the lowest offset
// of the copies on the store's servers. ok is false when a server holds
// no copy at all (a new or emptied server): a restore then starts at the
// log start.
func (s *Store) AppliedFence(ctx context.Context) (next map[int32]int64, ok bool, err error) {
	ctx, cancel := context.WithTimeout(ctx, s.cfg.CallTimeout)
	defer cancel()
	keys, err := s.fenceKeys(ctx, true)
	if err != nil {
		return nil, false, err
	}
	ok = true
	for _, k := range keys {
		raw, err := s.rdb.HGetAll(ctx, k).Result()
		if err != nil {
			return nil, false, fmt.Errorf("read the changelog fence %s: %w", k, err)
		}
		if len(raw) == 0 {
			ok = false
		}
		copyOf := make(map[int32]int64, len(raw))
		for f, v := range raw {
			p, err1 := strconv.ParseInt(f, 10, 32)
			off, err2 := strconv.ParseInt(v, 10, 64)
			if err1 != nil || err2 != nil {
				return nil, false, fmt.Errorf("read the changelog fence %s: bad entry %q=%q", k, f, v)
			}
			copyOf[int32(p)] = off
		}
		if next == nil {
			next = copyOf
			continue
		}
		// A partition one copy lacks is one that server may lack.
		for p, cur := range next {
			if off, has := copyOf[p]; !has {
				delete(next, p)
			} else if off < cur {
				next[p] = off
			}
		}
	}
	return next, ok && len(keys) > 0, nil
}

// fenceKeys are the copies of the changelog fence: copy 0 on a single
// server; on a cluster one per master, in a slot the master owns (looked
// up again when refresh is set or none is known yet).
func (s *Store) fenceKeys(ctx context.Context, refresh bool) ([]string, error) {
	c, ok := s.rdb.(*redis.ClusterClient)
	if !ok {
		return []string{s.keys.Applied(0)}, nil
	}
	s.fenceMu.Lock()
	defer s.fenceMu.Unlock()
	if !refresh && len(s.fenceCopies) > 0 {
		return s.fenceCopies, nil
	}
	shards, err := c.ClusterShards(ctx).Result()
	if err != nil {
		return nil, fmt.Errorf("cluster shards for the changelog fence: %w", err)
	}
	// shard returns the index of the shard that owns slot, or -1.
	shard := func(slot int) int {
		for i, sh := range shards {
			for _, r := range sh.Slots {
				if int64(slot) >= r.Start && int64(slot) <= r.End {
					return i
				}
			}
		}
		return -1
	}
	masters := map[int]bool{}
	for i, sh := range shards {
		if len(sh.Slots) > 0 {
			masters[i] = true
		}
	}
	var keys []string
	for n := 0; len(masters) > 0 && n < 100000; n++ {
		if i := shard(keySlot("fence:" + strconv.Itoa(n))); masters[i] {
			delete(masters, i)
			keys = append(keys, s.keys.Applied(n))
		}
	}
	if len(masters) > 0 {
		return nil, fmt.Errorf("changelog fence: no key found for %d shards", len(masters))
	}
	s.fenceCopies = keys
	return keys, nil
}

// keySlot is Redis Cluster's slot of a hash tag: CRC16 (XMODEM) mod 16384.
func keySlot(tag string) int {
	var crc uint16
	for i := 0; i < len(tag); i++ {
		crc ^= uint16(tag[i]) << 8
		for range 8 {
			if crc&0x8000 != 0 {
				crc = crc<<1 ^ 0x1021
			} else {
				crc <<= 1
			}
		}
	}
	return int(crc % 16384)
}

// SeedHead recreates the meta of a conversation that has none, so that
// its timeline continues at seq first in the given epoch (a restore whose
// changelog no longer holds the conversation's start). It reports whether
// it wrote; an existing meta is left alone.
func (s *Store) SeedHead(ctx context.Context, conv string, epoch, first uint64, t schemas.ConvType) (bool, error) {
	typ := TypeCode(t)
	ctx, cancel := context.WithTimeout(ctx, s.cfg.CallTimeout)
	defer cancel()
	n, err := restoreSeedScript.Run(ctx, s.rdb, []string{s.keys.ConvMeta(conv)}, epoch, first, typ, s.fenceArg()).Int()
	if err != nil {
		return false, fmt.Errorf("seed head of %s: %w", conv, fenced(err))
	}
	return n == 1, nil
}
