package redisstore

import (
	"context"
	_ "embed"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

var (
	//go:embed lua/expiry_sweep_acquire.lua
	expirySweepAcquireLua    string
	expirySweepAcquireScript = redis.NewScript(expirySweepAcquireLua)

	//go:embed lua/expiry_sweep_advance.lua
	expirySweepAdvanceLua    string
	expirySweepAdvanceScript = redis.NewScript(expirySweepAdvanceLua)
)

// ScanNode is one Redis server holding a share of the keys: the standalone
// server, or one master of a cluster.
type ScanNode struct {
	Name   string
	client *redis.Client
}

// ScanNodes lists the servers a full scan must visit.
func (s *Store) ScanNodes(ctx context.Context) ([]ScanNode, error) {
	switch c := s.rdb.(type) {
	case *redis.Client:
		return []ScanNode{{Name: c.Options().Addr, client: c}}, nil
	case *redis.ClusterClient:
		var mu sync.Mutex
		var nodes []ScanNode
		err := c.ForEachMaster(ctx, func(_ context.Context, m *redis.Client) error {
			mu.Lock()
			defer mu.Unlock()
			nodes = append(nodes, ScanNode{Name: m.Options().Addr, client: m})
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("list cluster masters: %w", err)
		}
		return nodes, nil
	}
	return nil, fmt.Errorf("scan: unsupported client %T", s.rdb)
}

// ScanKeys runs one SCAN step on a node over the keys of this store's
// prefix; count bounds the work of the step. next is 0 when the scan of the
// node is complete. Keys may repeat across steps (SCAN's guarantee).
func (s *Store) ScanKeys(ctx context.Context, node ScanNode, cursor uint64, count int64) (keys []string, next uint64, err error) {
	ctx, cancel := context.WithTimeout(ctx, s.cfg.CallTimeout)
	defer cancel()
	keys, next, err = node.client.Scan(ctx, cursor, s.keys.scanMatch(), count).Result()
	if err != nil {
		return nil, 0, fmt.Errorf("scan %s from %d: %w", node.Name, cursor, err)
	}
	return keys, next, nil
}

// SweepState is where the sweep of one job (a node's scan, or another
// periodic task) stands.
type SweepState struct {
	// Held: the caller holds the job's lease.
	Held bool
	// Cursor the next step starts from (0: a new cycle).
	Cursor uint64
	// Cycles completed so far, by any process.
	Cycles int64
	// LastDone is when the last cycle completed (zero if never).
	LastDone time.Time
}

// AcquireSweep takes or renews the lease on a job for the caller's token
// and returns the job's state (also when the lease is not taken). A job
// between cycles is taken only when its last cycle ended at least every
// before now (every 0: at once); a cycle under way is always continued.
func (s *Store) AcquireSweep(ctx context.Context, job, token string, lease, every time.Duration, now time.Time) (SweepState, error) {
	ctx, cancel := context.WithTimeout(ctx, s.cfg.CallTimeout)
	defer cancel()
	res, err := expirySweepAcquireScript.Run(ctx, s.rdb,
		[]string{s.keys.ExpiryLease(job), s.keys.ExpirySweep()},
		token, lease.Milliseconds(), job, now.UnixMilli(), every.Milliseconds()).StringSlice()
	if err != nil {
		return SweepState{}, fmt.Errorf("acquire sweep %s: %w", job, err)
	}
	if len(res) != 4 {
		return SweepState{}, fmt.Errorf("acquire sweep %s: script answered %q", job, res)
	}
	var st SweepState
	st.Held = res[0] == "1"
	cur, err1 := strconv.ParseUint(res[1], 10, 64)
	cyc, err2 := strconv.ParseInt(res[2], 10, 64)
	done, err3 := strconv.ParseInt(res[3], 10, 64)
	if err1 != nil || err2 != nil || err3 != nil {
		return SweepState{}, fmt.Errorf("acquire sweep %s: bad state %q", job, res[1:])
	}
	st.Cursor, st.Cycles = cur, cyc
	if done > 0 {
		st.LastDone = time.UnixMilli(done)
	}
	return st, nil
}

// AdvanceSweep records a finished step from cursor from to next; next 0
// completes the cycle at now and releases the lease. It reports false (and
// records nothing) if the caller no longer holds the lease or another
// holder moved the cursor.
func (s *Store) AdvanceSweep(ctx context.Context, job, token string, from, next uint64, now time.Time) (bool, error) {
	ctx, cancel := context.WithTimeout(ctx, s.cfg.CallTimeout)
	defer cancel()
	n, err := expirySweepAdvanceScript.Run(ctx, s.rdb,
		[]string{s.keys.ExpiryLease(job), s.keys.ExpirySweep()},
		token, job, strconv.FormatUint(from, 10), strconv.FormatUint(next, 10), now.UnixMilli()).Int()
	if err != nil {
		return false, fmt.Errorf("advance sweep %s: %w", job, err)
	}
	return n == 1, nil
}
