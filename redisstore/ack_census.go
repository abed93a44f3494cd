package redisstore

import (
	"context"
	_ "embed"
	"fmt"
	"hash/fnv"
	"time"

	"github.com/redis/go-redis/v9"
)

var (
	//go:embed lua/ack_census.lua
	ackCensusLua    string
	ackCensusScript = redis.NewScript(ackCensusLua)
)

// DeviceCensus counts users by the state of their devices. A user is
// anyone with an inbox; their last pull is the last sync or ack of any of
// their devices (both mark the device used), and a device evicted for
// idleness no longer counts as used.
type DeviceCensus struct {
	Users int
	// Idle: users none of whose devices acked since the idle cutoff,
	// never-pulled users included.
	Idle int
	// MultiDevice: users with two or more devices, who can drift apart.
	MultiDevice int
	// Drifted: users whose devices' cursors differ by more than the drift
	// threshold (see lua/ack_census.lua for how drift is summed).
	Drifted int
	// Backlog: messages in the users' inboxes that none of their devices
	// acked, by user bucket (UserBucket), large groups aside.
	Backlog [UserBuckets]int64
	// BacklogUnmeasured: users whose inbox index was too large to read.
	BacklogUnmeasured int
}

// UserBuckets is how many hash buckets users are counted in, as fanout
// counts its inbox writes (offlinebox_fanout_inbox_writes_total).
const UserBuckets = 16

// UserBucket is the hash bucket of a user id: FNV-1a mod UserBuckets.
func UserBucket(user string) int {
	h := fnv.New32a()
	_, _ = h.Write([]byte(user))
	return int(h.Sum32() % UserBuckets)
}

// Add adds o's counts to c.
func (c *DeviceCensus) Add(o DeviceCensus) {
	c.Users += o.Users
	c.Idle += o.Idle
	c.MultiDevice += o.MultiDevice
	c.Drifted += o.Drifted
	for i := range c.Backlog {
		c.Backlog[i] += o.Backlog[i]
	}
	c.BacklogUnmeasured += o.BacklogUnmeasured
}

// CensusStep is one step of a device census over one node: SCAN from
// cursor with COUNT count for users' inbox keys, and count those users
// (one read-only script each, pipelined). next is 0 when the node is done.
// SCAN may return a key twice in one pass, so counts are approximate in
// the same measure.
func (s *Store) CensusStep(ctx context.Context, node ScanNode, cursor uint64, count int64, idleBefore time.Time, drift uint64) (c DeviceCensus, next uint64, err error) {
	ctx, cancel := context.WithTimeout(ctx, s.cfg.CallTimeout)
	defer cancel()
	keys, next, err := node.client.Scan(ctx, cursor, s.keys.censusMatch(), count).Result()
	if err != nil {
		return c, 0, fmt.Errorf("census scan %s from %d: %w", node.Name, cursor, err)
	}
	var users []string
	for _, key := range keys {
		if ref, ok := s.keys.ParseKey(key); ok && ref.User != "" && ref.Part == "ib" {
			users = append(users, ref.User)
		}
	}
	// The script reads each device's cursor, so it is given their keys:
	// first the device sets, in one pipeline.
	devs := make([]*redis.StringSliceCmd, len(users))
	if len(users) > 0 {
		if _, err := node.client.Pipelined(ctx, func(p redis.Pipeliner) error {
			for i, u := range users {
				devs[i] = p.ZRange(ctx, s.keys.Devices(u), 0, -1)
			}
			return nil
		}); err != nil {
			return c, 0, fmt.Errorf("census devices on %s: %w", node.Name, err)
		}
	}
	calls := make([]scriptCall, 0, len(users))
	for i, u := range users {
		call := scriptCall{keys: []string{s.keys.Devices(u), s.keys.Inbox(u), s.keys.Profile(u)},
			args: []any{len(devs[i].Val()), idleBefore.UnixMilli()}}
		for _, d := range devs[i].Val() {
			call.keys = append(call.keys, s.keys.Cursor(u, d))
			call.args = append(call.args, d)
		}
		calls = append(calls, call)
	}
	cmds, err := s.evalPiped(ctx, ackCensusScript, calls)
	if err != nil {
		return c, 0, fmt.Errorf("census of %d users on %s: %w", len(calls), node.Name, err)
	}
	for i, cmd := range cmds {
		v, err := cmd.Int64Slice()
		if err != nil || len(v) != 5 {
			return c, 0, fmt.Errorf("census on %s: script answered %v, %v", node.Name, v, err)
		}
		if v[0] == 0 {
			continue
		}
		c.Users++
		c.Idle += int(v[2])
		if v[1] >= 2 {
			c.MultiDevice++
			if uint64(v[3]) > drift {
				c.Drifted++
			}
		}
		if v[4] < 0 {
			c.BacklogUnmeasured++
		} else {
			c.Backlog[UserBucket(users[i])] += v[4]
		}
	}
	return c, next, nil
}

// UserStores lists the stores that hold users' keys: the main store, and
// the hot store when one is configured. A census visits each.
func (r *InboxRouter) UserStores() []*Store {
	if r.hot == nil {
		return []*Store{r.main}
	}
	return []*Store{r.main, r.hot}
}
