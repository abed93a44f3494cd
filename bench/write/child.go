package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/offlinebox/offlinebox/bench/internal/harness"
	"github.com/offlinebox/offlinebox/redisstore"
	"github.com/offlinebox/offlinebox/schemas"
	"github.com/offlinebox/offlinebox/stream"
	"github.com/offlinebox/offlinebox/topology"
	"github.com/offlinebox/offlinebox/workers/fanout"
)

// The fanout worker runs as this program started again with childEnv set,
// so that its CPU is its own and so that a program built from another
// tree (the baseline) runs that tree's fanout and scripts on the same
// records.
const childEnv = "OFFLINEBOX_BENCH_WRITE_FANOUT"

// childResult is what a fanout child reports on its last stdout line.
type childResult struct {
	Handled int64   `json:"handled"`
	Failed  int64   `json:"failed"`
	BusyMS  float64 `json:"busy_ms"`
	CPUMS   float64 `json:"cpu_ms"`
}

// runChild drains OBW_WANT records of im.messages in consumer group
// OBW_GROUP into the store under OBW_PREFIX, then reports and ends.
func runChild() error {
	want, err := strconv.ParseInt(os.Getenv("OBW_WANT"), 10, 64)
	if err != nil {
		return fmt.Errorf("OBW_WANT: %w", err)
	}
	addr, brokers := os.Getenv("OBW_REDIS"), strings.Split(os.Getenv("OBW_BROKERS"), ",")
	if err := harness.CheckLoopback("redis", addr); err != nil {
		return err
	}
	st := &harness.Stack{RedisAddr: addr, Brokers: brokers}
	cpu0 := selfCPU()
	fo, err := startFanout(st, os.Getenv("OBW_GROUP"), redisstore.Config{Prefix: os.Getenv("OBW_PREFIX")})
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	err = fo.WaitHandled(ctx, want, "fanout", harness.NewLog())
	cpu := selfCPU() - cpu0
	res := childResult{Handled: fo.Handled(), Failed: fo.Failed(), BusyMS: harness.Millis(fo.Busy()), CPUMS: harness.Millis(cpu)}
	fo.Stop()
	if err != nil {
		return err
	}
	line, err := json.Marshal(res)
	if err != nil {
		return err
	}
	fmt.Printf("RESULT %s\n", line)
	return nil
}

// childFanout is the fanout worker on a stage of its own.
type childFanout struct {
	*harness.Stage
	worker *fanout.Fanout
	rdb    *redis.Client
	prod   *kgo.Client
}

// startFanout is harness.StartFanout in a consumer group of its own, so
// that ours and the baseline each read every record once.
func startFanout(st *harness.Stack, group string, store redisstore.Config) (*childFanout, error) {
	f := &childFanout{rdb: harness.NewCountedClient(st.RedisAddr, 64, &harness.CallCounter{})}
	var err error
	if f.prod, err = stream.NewProducer(st.Brokers); err != nil {
		return nil, err
	}
	// A changelog of its own: a fanout process restores from its topic
	// when it starts, and the other tree's records are not its store's.
	cfg := fanout.Config{Store: store, Brokers: st.Brokers, SequencedTopic: sequencedTopic(group),
		Logger: harness.QuietLogger()}
	if f.worker, err = fanout.New(cfg, f.rdb, f.prod); err != nil {
		return nil, fmt.Errorf("fanout worker: %w", err)
	}
	rc := topology.Fanout().RunnerConfig(st.Brokers)
	rc.Group, rc.ClientID, rc.Logger = group, group, cfg.Logger
	if f.Stage, err = harness.StartStage(rc, f.worker); err != nil {
		return nil, fmt.Errorf("fanout stage: %w", err)
	}
	return f, nil
}

// Stop stops the runner (committing what is done), then the worker.
func (f *childFanout) Stop() {
	f.Stage.Stop()
	f.worker.Close()
	f.prod.Close()
	_ = f.rdb.Close()
}

// sequencedTopic is the changelog topic of a consumer group's fanout.
func sequencedTopic(group string) string { return schemas.TopicSequenced + "." + group }

func selfCPU() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// drain runs exe as a fanout child over want records and returns its
// report.
func drain(ctx context.Context, exe string, st *harness.Stack, group, prefix string, want int) (childResult, error) {
	cmd := exec.CommandContext(ctx, exe)
	cmd.Env = append(os.Environ(), childEnv+"=1", "OBW_REDIS="+st.RedisAddr, "OBW_BROKERS="+strings.Join(st.Brokers, ","),
		"OBW_GROUP="+group, "OBW_PREFIX="+prefix, "OBW_WANT="+strconv.Itoa(want))
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		return childResult{}, err
	}
	if err := cmd.Start(); err != nil {
		return childResult{}, fmt.Errorf("start fanout child %s: %w", exe, err)
	}
	var res childResult
	found := false
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		if line, ok := strings.CutPrefix(sc.Text(), "RESULT "); ok {
			found = json.Unmarshal([]byte(line), &res) == nil
		}
	}
	if err := cmd.Wait(); err != nil {
		return res, fmt.Errorf("fanout child %s (group %s): %w", exe, group, err)
	}
	if !found {
		return res, fmt.Errorf("fanout child %s (group %s) gave no result", exe, group)
	}
	return res, nil
}
