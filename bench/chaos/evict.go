package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/offlinebox/offlinebox/bench/checker"
	"github.com/offlinebox/offlinebox/bench/internal/harness"
	"github.com/offlinebox/offlinebox/schemas"
	"github.com/offlinebox/offlinebox/topology"
)

// evictScenario is the redis-evicts scenario of the suite (scenarios()).
func evictScenario() scenario {
	return scenario{name: "redis-evicts", about: "redis-server evicts keys while traffic flows (allkeys-lru, a maxmemory too low for half a second): fanout holds, repair-evicted rebuilds from ClickHouse", fanouts: 1, minStream: 12 * time.Second, fault: redisEvictsKeys}
}

// evictFor is how long the server runs with a maxmemory below what it
// holds and allkeys-lru: the writes of that moment make it evict keys.
const evictFor = 500 * time.Millisecond

// evictShare is the share of the scenario's own memory the server is
// given meanwhile, on top of what it uses empty: the keys earlier
// scenarios left on the suite's server, least recently used, go first, so
// the scenario's own keys are evicted however many the server holds.
const evictShare = 0.9

// redisEvictsKeys makes redis-server evict keys while traffic flows (an
// operator's CONFIG SET maxmemory-policy allkeys-lru with a maxmemory too
// low, set back to noeviction half a second later) and the fanout process
// is stopped, then checks that the fanout started again holds sequencing
// (evicted_keys rose since the server was verified), runs the documented repair (`offlinebox repair-evicted`: every
// conversation rebuilt from ClickHouse, the hold released) once the
// history sink caught up, and waits until fanout commits again.
func redisEvictsKeys(ctx context.Context, s *suite, e *env, run *checker.Run) (string, error) {
	startMem, err := stat(ctx, e.rdb, "used_memory")
	if err != nil {
		return "", err
	}
	if err := at(ctx, run, 0.4); err != nil {
		return "", err
	}
	share := run.Produced() * 100
	holds := e.logged(evictedLine)
	// The eviction comes while fanout is away (stopped, started again
	// after): one running would sequence on what is left until its next
	// recheck (Config.EvictionRecheck), which no repair can undo. It is
	// stopped with SIGTERM, so that it produced what it sequenced: after a
	// kill -9 between its Redis step and its produce the counter is above
	// anything the history will ever hold, and repair-evicted, waiting for
	// the history, never rebuilds that conversation (fanout-kill covers
	// kill -9 on its own).
	w := e.fanouts[0]
	w.Stop(10 * time.Second)
	evicted, err := e.evict(ctx, startMem)
	if err != nil {
		return "", err
	}
	if err := w.Start(); err != nil {
		return "", err
	}
	s.log.Printf("%s: redis-server evicted %d keys at %.0f%% of the stream (allkeys-lru, maxmemory %.0f%% of the scenario's memory, for %s)",
		e.name, evicted, share, evictShare*100, evictFor)
	start := time.Now()
	if err := e.waitLogged(ctx, evictedLine, holds); err != nil {
		return "", err
	}
	// Held: nothing is committed while it lasts.
	before, _, err := checker.Progress(ctx, e.brokers, topology.GroupFanout, schemas.TopicMessages)
	if err != nil {
		return "", err
	}
	if err := harness.Sleep(ctx, 2*time.Second); err != nil {
		return "", err
	}
	after, _, err := checker.Progress(ctx, e.brokers, topology.GroupFanout, schemas.TopicMessages)
	if err != nil {
		return "", err
	}
	if after != before {
		return "", fmt.Errorf("fanout committed %d records while it should hold", after-before)
	}
	hist := topology.History()
	if err := checker.WaitCaughtUp(ctx, e.brokers, checker.GroupTopics{Group: hist.Group, Topics: hist.Inputs}); err != nil {
		return "", err
	}
	rebuilt, err := e.repairEvicted(ctx)
	if err != nil {
		return "", err
	}
	if err := e.waitCommitted(ctx, after); err != nil {
		return "", err
	}
	// The scenarios after this one start on the same server: their fanout
	// would find its evicted_keys and hold.
	if err := e.rdb.ConfigResetStat(ctx).Err(); err != nil {
		return "", err
	}
	held := time.Since(start).Round(time.Millisecond)
	s.log.Printf("%s: fanout held sequencing, %d conversations rebuilt by repair-evicted, sequencing again after %s", e.name, rebuilt.convs, held)
	return fmt.Sprintf("redis-server evicted %d keys at %.0f%% of the stream; fanout held (nothing committed for 2 s), "+
		"repair-evicted rebuilt %d conversations from ClickHouse, restored %d inbox entries and %d users' list indexes, "+
		"fanout sequenced again %s after the eviction", evicted, share, rebuilt.convs, rebuilt.inboxes, rebuilt.users, held), nil
}

var evictedLine = regexp.MustCompile(`evicted keys since it was verified: sequencing is held`)

// evict gives the server, under allkeys-lru, for evictFor, less memory
// than it uses: what it used empty and evictShare of what it took on
// since the scenario began (it used before then), and at most evictShare
// of all it uses; then noeviction and no maxmemory again. It returns how
// many keys the server evicted meanwhile.
func (e *env) evict(ctx context.Context, before int64) (int64, error) {
	was, err := stat(ctx, e.rdb, "evicted_keys")
	if err != nil {
		return 0, err
	}
	used, err := stat(ctx, e.rdb, "used_memory")
	if err != nil {
		return 0, err
	}
	empty, err := stat(ctx, e.rdb, "used_memory_startup")
	if err != nil {
		return 0, err
	}
	limit := int64(float64(used) * evictShare)
	if used > before {
		limit = min(limit, empty+int64(float64(used-before)*evictShare))
	}
	set := func(kv ...string) error {
		for i := 0; i < len(kv); i += 2 {
			if err := e.rdb.ConfigSet(ctx, kv[i], kv[i+1]).Err(); err != nil {
				return err
			}
		}
		return nil
	}
	if err := set("maxmemory-policy", "allkeys-lru", "maxmemory", strconv.FormatInt(limit, 10)); err != nil {
		return 0, err
	}
	werr := harness.Sleep(ctx, evictFor)
	if err := set("maxmemory-policy", "noeviction", "maxmemory", "0"); err != nil {
		return 0, err
	}
	if werr != nil {
		return 0, werr
	}
	now, err := stat(ctx, e.rdb, "evicted_keys")
	if err != nil {
		return 0, err
	}
	if now == was {
		return 0, fmt.Errorf("redis-server evicted nothing (used_memory %d)", used)
	}
	return now - was, nil
}

// stat reads one number of INFO.
func stat(ctx context.Context, rdb *redis.Client, field string) (int64, error) {
	info, err := rdb.Info(ctx).Result()
	if err != nil {
		return 0, err
	}
	for _, l := range strings.Split(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(l), field+":"); ok {
			return strconv.ParseInt(v, 10, 64)
		}
	}
	return 0, fmt.Errorf("INFO names no %s", field)
}

// repaired is what repair-evicted said it did.
type repaired struct {
	convs, inboxes, users int
}

// repairEvicted runs the repair an operator runs: the binary's
// repair-evicted on the scenario's stores; it returns what it rebuilt.
func (e *env) repairEvicted(ctx context.Context) (repaired, error) {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, e.bin, "repair-evicted", "-redis", e.redis, "-prefix", e.prefix,
		"-clickhouse", e.chAddr, "-clickhouse-db", e.database)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return repaired{}, fmt.Errorf("repair-evicted: %w\n%s", err, out.String())
	}
	var r repaired
	for _, c := range []struct {
		re *regexp.Regexp
		n  *int
	}{
		{regexp.MustCompile(`(\d+) conversations rebuilt`), &r.convs},
		{regexp.MustCompile(`(\d+) inbox entries restored`), &r.inboxes},
		{regexp.MustCompile(`(\d+) users' list indexes rebuilt`), &r.users},
	} {
		m := c.re.FindStringSubmatch(out.String())
		if m == nil {
			return r, fmt.Errorf("repair-evicted said no %q:\n%s", c.re, out.String())
		}
		*c.n, _ = strconv.Atoi(m[1])
	}
	return r, nil
}

// logged counts the lines the fanout processes logged that match re.
func (e *env) logged(re *regexp.Regexp) int {
	n := 0
	for _, w := range e.fanouts {
		if b, err := os.ReadFile(w.LogPath); err == nil {
			n += len(re.FindAllIndex(b, -1))
		}
	}
	return n
}

// waitLogged waits (up to a minute) until a fanout process logged a line
// matching re beyond the given count.
func (e *env) waitLogged(ctx context.Context, re *regexp.Regexp, before int) error {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	for e.logged(re) <= before {
		if err := harness.Sleep(ctx, 100*time.Millisecond); err != nil {
			return fmt.Errorf("no fanout process logged %q: %w", re, err)
		}
	}
	return nil
}
