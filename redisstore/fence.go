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

// fenced maps a script's OBFENCED refusal to ErrFenced.
func fenced(err error) error {
	if redis.HasErrorPrefix(err, "OBFENCED") {
		return fmt.Errorf("%w: %s", ErrFenced, strings.TrimPrefix(err.Error(), "OBFENCED "))
	}
	return err
}

// Instance is one redis-server process: its address and run_id.
type Instance struct {
	Addr  string
	RunID string
}

// Instances returns the run_id of every server the store writes to: the
// server, or every master of a cluster.
func (s *Store) Instances(ctx context.Context) ([]Instance, error) {
	ctx, cancel := context.WithTimeout(ctx, s.cfg.CallTimeout)
	defer cancel()
	one := func(ctx context.Context, c *redis.Client) (Instance, error) {
		info, err := c.Info(ctx, "server").Result()
		if err != nil {
			return Instance{}, fmt.Errorf("run_id of %s: %w", c.Options().Addr, err)
		}
		id := infoField(info, "run_id")
		if id == "" {
			return Instance{}, fmt.Errorf("run_id of %s: INFO server names none", c.Options().Addr)
		}
		return Instance{Addr: c.Options().Addr, RunID: id}, nil
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

// RaiseFence raises the "applied up to" fence of the changelog on this
// store: next[p] is the offset of partition p below which every record's
// effects were acknowledged by the store's servers. It only raises.
// Refused with ErrFenced on an instance the store's Fence has not
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
	if err := restoreFenceScript.Run(ctx, s.rdb, []string{s.keys.Applied()}, args...).Err(); err != nil {
		return fmt.Errorf("raise the changelog fence: %w", fenced(err))
	}
	return nil
}

// AppliedFence reads the changelog fence: partition → next offset. ok is
// false when the store holds no fence at all (a new or emptied store).
func (s *Store) AppliedFence(ctx context.Context) (next map[int32]int64, ok bool, err error) {
	ctx, cancel := context.WithTimeout(ctx, s.cfg.CallTimeout)
	defer cancel()
	raw, err := s.rdb.HGetAll(ctx, s.keys.Applied()).Result()
	if err != nil {
		return nil, false, fmt.Errorf("read the changelog fence: %w", err)
	}
	next = make(map[int32]int64, len(raw))
	for k, v := range raw {
		p, err1 := strconv.ParseInt(k, 10, 32)
		off, err2 := strconv.ParseInt(v, 10, 64)
		if err1 != nil || err2 != nil {
			return nil, false, fmt.Errorf("read the changelog fence: bad entry %q=%q", k, v)
		}
		next[int32(p)] = off
	}
	return next, len(raw) > 0, nil
}

// SeedHead recreates the meta of a conversation that has none, so that
// its timeline continues at seq first in the given epoch (a restore whose
// changelog no longer holds the conversation's start). It reports whether
// it wrote; an existing meta is left alone.
func (s *Store) SeedHead(ctx context.Context, conv string, epoch, first uint64, direct bool) (bool, error) {
	typ := "g"
	if direct {
		typ = "d"
	}
	ctx, cancel := context.WithTimeout(ctx, s.cfg.CallTimeout)
	defer cancel()
	n, err := restoreSeedScript.Run(ctx, s.rdb, []string{s.keys.ConvMeta(conv)}, epoch, first, typ, s.fenceArg()).Int()
	if err != nil {
		return false, fmt.Errorf("seed head of %s: %w", conv, fenced(err))
	}
	return n == 1, nil
}
