package main

import (
	"context"
	"fmt"
	"log"
	"net/http"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/offlinebox/offlinebox/auth"
	"github.com/offlinebox/offlinebox/bench/checker"
	"github.com/offlinebox/offlinebox/embedded"
	"github.com/offlinebox/offlinebox/schemas"
	"github.com/offlinebox/offlinebox/topology"
)

// fault is one thing broken under load; apply breaks it (and mends it
// where a person would) and says what it did.
type fault struct {
	name  string
	apply func(ctx context.Context, s *stack) (string, error)
}

func faultsFor(o options) []fault {
	if o.short {
		return []fault{{"kill-api", killAPI}, {"redis-master-failover", failMaster}}
	}
	return []fault{{"kill-api", killAPI}, {"kill-fanout-and-push", killWorkers},
		{"redis-master-failover", failMaster}, {"broker-down", brokerDown}, {"clickhouse-shard-down", clickhouseShardDown}}
}

// faultResult is one fault's convergence check.
type faultResult struct {
	Name   string `json:"name"`
	Action string `json:"action"`
	// The round's workload as the checker accounts it.
	checker.Delivery
	SeqsReused int `json:"seqs_reused"`
	// HistoryMissing: places devices stored that ClickHouse lacks once
	// the history sink caught up.
	HistoryMissing int `json:"history_missing"`
	// ReceiptsConvergedS: after the fault, how long convindex took to
	// apply every receipt produced until then; LagZeroS: the same for
	// every group of the stored path and everything produced until then.
	ReceiptsConvergedS float64  `json:"receipts_converged_s"`
	LagZeroS           float64  `json:"lag_zero_s"`
	VerifyOK           bool     `json:"verify_ok"`
	Verify             string   `json:"verify,omitempty"`
	LiveSessions       int      `json:"live_sessions"`
	LiveDrops          int      `json:"live_drops"`
	Pushed             int      `json:"pushed"`
	Problems           []string `json:"problems,omitempty"`
	Error              string   `json:"error,omitempty"`
	// requests: syncs and API sends of the round's devices.
	requests int
}

func (f faultResult) ok() bool {
	return f.Error == "" && f.Lost == 0 && f.Duplicates == 0 && f.OutOfOrder == 0 && f.Unexpected == 0 &&
		f.SeqsReused == 0 && f.HistoryMissing == 0 && f.VerifyOK && f.Expected > 0
}

// workloadConfig: returning users with up to three devices, direct
// conversations, groups from 3 members up and one large group, resends,
// mentions, QoS 0 (typing-like) records, joins and leaves.
func workloadConfig(o options, round int) (checker.Config, checker.Behaviour) {
	users, large := 30, 3000
	if o.short {
		users, large = 15, 2001
	}
	w := checker.Config{Seed: int64(round + 1), Namespace: fmt.Sprintf("r%d-", round), Users: users, DevicesPerUser: 3,
		Directs: users, Groups: users / 3, GroupSize: 3, LargeGroupSize: large, Messages: users * 40,
		APIMessages: users * 3, MentionPercent: 10, ResendPercent: 5, QoS0Percent: 5, Joins: 3, Leaves: 2}
	b := checker.Behaviour{OfflineMax: 800 * time.Millisecond, ServerCursorPercent: 10, ResendPercent: 20, ReadPercent: 30}
	return w, b
}

// round plays one workload through the balancer, applies f at 40% of its
// stream, and checks everything after.
func (s *stack) round(ctx context.Context, o options, i int, f fault, k *auth.Keyring, logger *log.Logger) faultResult {
	fr := faultResult{Name: f.name}
	wc, b := workloadConfig(o, i)
	w, err := checker.Generate(wc)
	if err != nil {
		fr.Error = err.Error()
		return fr
	}
	s.keyring, s.members = k, memberPairs(w)
	run, err := checker.Start(ctx, checker.RunConfig{Workload: w, Brokers: s.brokers, APIURL: s.lbURL,
		Token: func(u, d string) (string, error) { return k.Mint(u, d, time.Hour) }, Duration: o.round, Behaviour: b,
		Drain: s.drain, LiveURLs: []string{s.lbURL}, Logf: func(f string, a ...any) { logger.Printf(wc.Namespace+f, a...) }})
	if err != nil {
		fr.Error = err.Error()
		return fr
	}
	if err := run.WaitProduced(ctx, 0.4); err == nil {
		fr.Action, err = f.apply(ctx, s)
		logger.Printf("%s: %s", f.name, fr.Action)
		if err != nil {
			fr.Error = "fault: " + err.Error()
		}
	}
	if fr.ReceiptsConvergedS, err = s.lagZero(ctx, checker.GroupTopics{Group: topology.GroupConvindex, Topics: []string{schemas.TopicReceipts}}); err != nil && fr.Error == "" {
		fr.Error = "receipts: " + err.Error()
	}
	if fr.LagZeroS, err = s.lagZero(ctx, pipelineGroups()...); err != nil && fr.Error == "" {
		fr.Error = "lag: " + err.Error()
	}
	rep, err := run.Finish(ctx)
	if err != nil {
		fr.Error = err.Error()
		return fr
	}
	// Records the load generator gave up on count as lost here.
	fr.Delivery, fr.Problems = rep.Delivery, rep.Problems
	fr.Lost += rep.NotInLog
	fr.LiveSessions, fr.LiveDrops, fr.Pushed = rep.LiveSessions, rep.LiveDrops, rep.Pushed
	fr.requests = rep.Syncs + rep.APISent + rep.APIResent
	if fr.SeqsReused, err = s.seqsReused(ctx, rep.Placed); err != nil && fr.Error == "" {
		fr.Error = "seqs: " + err.Error()
	}
	if fr.HistoryMissing, err = s.historyMissing(ctx, rep.Placed); err != nil && fr.Error == "" {
		fr.Error = "history: " + err.Error()
	}
	fr.VerifyOK, fr.Verify = s.verify(ctx)
	logger.Printf("%s: expected %d delivered %d lost %d duplicates %d seqs reused %d history missing %d verify ok %v, receipts %.1fs, lag 0 after %.1fs, %d live sessions (%d dropped)",
		f.name, fr.Expected, fr.Delivered, fr.Lost, fr.Duplicates, fr.SeqsReused, fr.HistoryMissing, fr.VerifyOK, fr.ReceiptsConvergedS, fr.LagZeroS, fr.LiveSessions, fr.LiveDrops)
	return fr
}

// noFault breaks nothing: the baseline round.
func noFault(context.Context, *stack) (string, error) { return "nothing broken", nil }

// killAPI kills the first running API node with -9 and its sockets; the
// balancer takes it out, the devices reconnect to the others. It is
// started again once the round's checks run.
func killAPI(ctx context.Context, s *stack) (string, error) {
	for _, p := range s.apis {
		if p.Running() {
			p.Kill()
			go func() {
				time.Sleep(10 * time.Second)
				_ = p.Start()
			}()
			return "killed " + p.Name + " (-9) with its live connections; restarted 10s later", nil
		}
	}
	return "", fmt.Errorf("no API node running")
}

// killWorkers kills a fanout and a push worker with -9: their groups
// rebalance onto the others; both start again 10 s later.
func killWorkers(ctx context.Context, s *stack) (string, error) {
	var names []string
	for _, kind := range []string{"fanout", "push"} {
		p := s.workers[kind][0]
		p.Kill()
		names = append(names, p.Name)
		go func() {
			time.Sleep(10 * time.Second)
			_ = p.Start()
		}()
	}
	return "killed " + strings.Join(names, " and ") + " (-9); restarted 10s later", nil
}

// failMaster kills a master with -9, waits until its replica is promoted
// and the cluster is ok again, then starts the old master again (empty:
// it rejoins as the new master's replica and copies its data).
func failMaster(ctx context.Context, s *stack) (string, error) {
	master, replica, err := s.masterAndReplica(ctx)
	if err != nil {
		return "", err
	}
	start := time.Now()
	if err := master.Kill(); err != nil {
		return "", err
	}
	how := "promoted by the cluster's vote"
	if len(s.redis) < 6 {
		// Fewer than three masters cannot vote a replica in: an operator
		// promotes it by hand.
		if err := s.takeover(ctx, replica); err != nil {
			return "", err
		}
		how = "promoted by CLUSTER FAILOVER TAKEOVER (too few masters to vote)"
	}
	if err := s.waitPromoted(ctx, master.Addr(), replica); err != nil {
		return "", err
	}
	promoted := time.Since(start)
	if err := master.Restart(ctx); err != nil {
		return "", fmt.Errorf("restart %s: %w", master.Addr(), err)
	}
	return fmt.Sprintf("killed master %s (-9); replica %s %s, the cluster ok after %.1fs; the old master rejoined as a replica",
		master.Addr(), replica, how, promoted.Seconds()), nil
}

func (s *stack) takeover(ctx context.Context, replica string) error {
	r := redis.NewClient(&redis.Options{Addr: replica, DialTimeout: 2 * time.Second, ReadTimeout: 5 * time.Second})
	defer r.Close()
	if err := r.Do(ctx, "CLUSTER", "FAILOVER", "TAKEOVER").Err(); err != nil {
		return fmt.Errorf("redis %s: CLUSTER FAILOVER TAKEOVER: %w", replica, err)
	}
	return nil
}

// masterAndReplica finds a master with a replica, by CLUSTER NODES.
func (s *stack) masterAndReplica(ctx context.Context) (*embedded.Process, string, error) {
	rdb := redis.NewClient(&redis.Options{Addr: s.liveRedis(), DialTimeout: 2 * time.Second, ReadTimeout: 2 * time.Second})
	defer rdb.Close()
	nodes, err := rdb.ClusterNodes(ctx).Result()
	if err != nil {
		return nil, "", err
	}
	addrOf, masterOf := map[string]string{}, map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(nodes), "\n") {
		f := strings.Fields(line)
		if len(f) < 4 {
			continue
		}
		addrOf[f[0]] = strings.SplitN(f[1], "@", 2)[0]
		if strings.Contains(f[2], "slave") && !strings.Contains(f[2], "fail") {
			masterOf[addrOf[f[0]]] = f[3]
		}
	}
	for replica, mid := range masterOf {
		for _, n := range s.redis {
			if n.Addr() == addrOf[mid] && n.Pid() != 0 {
				return n, replica, nil
			}
		}
	}
	return nil, "", fmt.Errorf("no master with a replica in CLUSTER NODES:\n%s", nodes)
}

func (s *stack) liveRedis() string {
	for _, n := range s.redis {
		if n.Pid() != 0 {
			return n.Addr()
		}
	}
	return s.redisAddrs[0]
}

// waitPromoted waits until replica reports itself master and every
// surviving node reports cluster_state:ok.
func (s *stack) waitPromoted(ctx context.Context, dead, replica string) error {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	r := redis.NewClient(&redis.Options{Addr: replica, DialTimeout: 2 * time.Second, ReadTimeout: 2 * time.Second})
	defer r.Close()
	for {
		role, err := r.Do(ctx, "ROLE").Slice()
		if err == nil && len(role) > 0 && role[0] == "master" {
			break
		}
		if ctx.Err() != nil {
			return fmt.Errorf("replica %s never promoted: %v", replica, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	for _, n := range s.redis {
		if n.Addr() == dead {
			continue
		}
		rdb := redis.NewClient(&redis.Options{Addr: n.Addr(), DialTimeout: 2 * time.Second, ReadTimeout: 2 * time.Second})
		for {
			info, err := rdb.ClusterInfo(ctx).Result()
			if err == nil && strings.Contains(info, "cluster_state:ok") {
				break
			}
			if ctx.Err() != nil {
				_ = rdb.Close()
				return fmt.Errorf("redis %s never ok again: %v", n.Addr(), err)
			}
			time.Sleep(100 * time.Millisecond)
		}
		_ = rdb.Close()
	}
	return nil
}

// brokerDown makes broker 1 refuse every request for 20 s and moves its
// partitions' leadership to the others (the broker process's control).
func brokerDown(ctx context.Context, s *stack) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+s.control+"/down?node=1&for=20s", nil)
	if err != nil {
		return "", err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	var b strings.Builder
	buf := make([]byte, 512)
	n, _ := resp.Body.Read(buf)
	b.Write(buf[:n])
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("broker control: %s %s", resp.Status, b.String())
	}
	return "broker " + strings.TrimSpace(b.String()), nil
}
