package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"time"

	"github.com/offlinebox/offlinebox/bench/checker"
	"github.com/offlinebox/offlinebox/bench/internal/harness"
	"github.com/offlinebox/offlinebox/embedded"
	"github.com/offlinebox/offlinebox/schemas"
	"github.com/offlinebox/offlinebox/topology"
)

// tailLength is how long the pipeline runs on between the snapshot and
// the kill: the writes Redis loses, offsets of which fanout commits.
const tailLength = 3 * time.Second

// redisLosesTail snapshots Redis while traffic flows, lets the pipeline
// run on (fanout commits what it wrote after the snapshot), then kills
// redis-server with -9 and starts it from the snapshot, as a host crash
// under appendfsync everysec does with its last second, only longer.
func redisLosesTail(ctx context.Context, s *suite, e *env, run *checker.Run) (string, error) {
	if err := at(ctx, run, 0.3); err != nil {
		return "", err
	}
	snap := filepath.Join(s.dir, e.name+".rdb")
	atSnap, _, err := checker.Progress(ctx, e.brokers, topology.GroupFanout, schemas.TopicMessages)
	if err != nil {
		return "", err
	}
	if err := embedded.SnapshotRedis(ctx, s.redis, snap); err != nil {
		return "", err
	}
	share := run.Produced() * 100
	if err := harness.Sleep(ctx, tailLength); err != nil {
		return "", err
	}
	atKill, _, err := checker.Progress(ctx, e.brokers, topology.GroupFanout, schemas.TopicMessages)
	if err != nil {
		return "", err
	}
	restores := e.restoresLogged()
	if err := s.redis.Kill(); err != nil {
		return "", err
	}
	if err := embedded.ReplaceRedisData(s.redis, snap); err != nil {
		return "", err
	}
	start := time.Now()
	if err := s.redis.Restart(ctx); err != nil {
		return "", fmt.Errorf("start redis from the snapshot: %w", err)
	}
	lost := atKill - atSnap
	s.log.Printf("%s: redis-server snapshotted at %.0f%% of the stream, killed -9 %s later and started from the snapshot in %s: %d im.messages records committed after the snapshot",
		e.name, share, tailLength, time.Since(start).Round(time.Millisecond), lost)
	if err := e.waitRestored(ctx, restores); err != nil {
		return "", err
	}
	if err := e.waitCommitted(ctx, atKill); err != nil {
		return "", err
	}
	restored := e.restoredFromChangelog()
	s.log.Printf("%s: fanout restored from im.sequenced: %s", e.name, restored)
	return fmt.Sprintf("snapshot at %.0f%% of the stream, kill -9 of redis-server %s later, started from the snapshot: "+
		"%d im.messages records committed after the snapshot; fanout restored %s", share, tailLength, lost, restored), nil
}

// restoresLogged counts the restores the fanout processes finished.
func (e *env) restoresLogged() int {
	n := 0
	for _, w := range e.fanouts {
		if b, err := os.ReadFile(w.LogPath); err == nil {
			n += len(restoredLine.FindAllIndex(b, -1))
		}
	}
	return n
}

// waitRestored waits until a fanout process finished a restore beyond the
// given count: the fanout noticed the new instance and replayed the
// changelog to it.
func (e *env) waitRestored(ctx context.Context, before int) error {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	for e.restoresLogged() <= before {
		if err := harness.Sleep(ctx, 100*time.Millisecond); err != nil {
			return fmt.Errorf("no fanout process restored redis from the changelog: %w", err)
		}
	}
	return nil
}

var restoredLine = regexp.MustCompile(`redis verified against the changelog.* records=(\d+) appended=(\d+) conflicts=(\d+)`)

// restoredFromChangelog sums what the fanout processes' restores said in
// their logs.
func (e *env) restoredFromChangelog() string {
	var runs, records, appended, conflicts int
	for _, w := range e.fanouts {
		b, err := os.ReadFile(w.LogPath)
		if err != nil {
			continue
		}
		for _, m := range restoredLine.FindAllStringSubmatch(string(b), -1) {
			r, _ := strconv.Atoi(m[1])
			a, _ := strconv.Atoi(m[2])
			c, _ := strconv.Atoi(m[3])
			runs, records, appended, conflicts = runs+1, records+r, appended+a, conflicts+c
		}
	}
	return fmt.Sprintf("%d changelog records replayed in %d restores, %d entries put back, %d conflicts", records, runs, appended, conflicts)
}
