package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"github.com/offlinebox/offlinebox/redisstore/rebuild"
	"io"
	"time"

	"github.com/offlinebox/offlinebox/redisstore"
)

// repairRetry is how often repair-evicted tries again the conversations
// ClickHouse is still behind on (the history sink catches up while
// fanout is held).
const repairRetry = 2 * time.Second

// runRepairEvicted repairs a store whose Redis evicted keys: once every
// server's policy is noeviction, it rebuilds every conversation ClickHouse
// knows (a new epoch each: clients rebase), waiting up to -wait for
// ClickHouse to catch up with those it is behind on, rebuilds every user's
// list indexes from their inbox and mention lane, then releases the
// eviction hold fanout set, recording the servers' evicted_keys of now.
// It exits 1, the hold left in place, when a conversation could not be
// rebuilt.
func runRepairEvicted(ctx context.Context, args []string, stdout io.Writer) error {
	var patience time.Duration
	c, err := parseTool("repair-evicted", args, func(fs *flag.FlagSet) {
		fs.DurationVar(&patience, "wait", time.Minute, "how long to wait for ClickHouse to catch up with a conversation it is behind on")
	})
	if err != nil {
		return err
	}
	policies, err := loadPolicies(c)
	if err != nil {
		return err
	}
	p, err := open(ctx, c, needs{redis: true, clickhouse: true})
	if err != nil {
		return err
	}
	defer p.close()
	stores := []*redisstore.Store{p.store}
	if p.hot != nil {
		stores = append(stores, p.hot)
	}
	for _, st := range stores {
		ins, err := st.Instances(ctx)
		if err != nil {
			return err
		}
		for _, in := range ins {
			if in.Evicts != "" {
				return fmt.Errorf("redis at %s may still evict keys (maxmemory-policy %s): set maxmemory-policy noeviction first", in.Addr, in.Evicts)
			}
		}
		if why, held, err := st.EvictionHold(ctx); err != nil {
			return err
		} else if held {
			fmt.Fprintf(stdout, "held: %s\n", why)
		}
	}
	opt := rebuild.Options{}
	if policies != nil {
		opt.Retention = policies.Current().LongestInboxWindows()
	}
	if err := rebuildEveryConversation(ctx, p, opt, patience, stdout); err != nil {
		return err
	}
	// The users' list indexes repeat their inboxes and mention lanes: an
	// eviction may have taken one side and left the other.
	users := 0
	for _, st := range stores {
		n, err := rebuild.New(st).ReindexUsers(ctx)
		if err != nil {
			return err
		}
		users += n
	}
	fmt.Fprintf(stdout, "%d users' list indexes rebuilt\n", users)
	for _, st := range stores {
		ins, err := st.Instances(ctx)
		if err != nil {
			return err
		}
		if err := st.ReleaseEvictionHold(ctx, ins); err != nil {
			return err
		}
	}
	fmt.Fprintln(stdout, "eviction hold released: fanout sequences again")
	return nil
}

// rebuildEveryConversation rebuilds every conversation ClickHouse knows,
// then again those it was behind on, until none is left or patience ran
// out.
func rebuildEveryConversation(ctx context.Context, p *processes, opt rebuild.Options, patience time.Duration, stdout io.Writer) error {
	var behind []string
	var inboxes int
	var inboxErr error
	restore := func(conv string) {
		k, err := rebuild.New(p.store).RestoreInboxEntries(ctx, conv)
		inboxes += k
		if err != nil && inboxErr == nil {
			inboxErr = err
		}
	}
	n, err := rebuild.New(p.store).RebuildAll(ctx, p.ch, p.ch, opt, func(res rebuild.Result, err error) {
		if err != nil {
			behind = append(behind, res.Conv)
		} else {
			restore(res.Conv)
		}
	})
	if err != nil {
		return err
	}
	deadline := time.Now().Add(patience)
	for len(behind) > 0 && time.Now().Before(deadline) {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(repairRetry):
		}
		var still []string
		for _, conv := range behind {
			_, err := rebuild.New(p.store).Rebuild(ctx, p.ch, conv, opt)
			switch {
			case err == nil:
				n++
				restore(conv)
			case errors.Is(err, rebuild.ErrHistoryBehind), errors.Is(err, rebuild.ErrRaced), errors.Is(err, rebuild.ErrNoHistory):
				still = append(still, conv)
			default:
				return err
			}
		}
		behind = still
	}
	fmt.Fprintf(stdout, "%d conversations rebuilt from ClickHouse, %d inbox entries restored\n", n, inboxes)
	if inboxErr != nil {
		return fmt.Errorf("restore inbox entries: %w: the eviction hold stays; run repair-evicted again", inboxErr)
	}
	if len(behind) > 0 {
		return fmt.Errorf("%d conversations could not be rebuilt within %s (first %s): the eviction hold stays; run repair-evicted again",
			len(behind), patience, behind[0])
	}
	return nil
}
