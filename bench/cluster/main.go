// Command cluster runs offlinebox as a cluster on this machine: a Redis
// Cluster of masters with a replica each (store and live bus), a
// three-broker Kafka in a process of its own, two ClickHouse shards, API nodes behind
// haproxy and every worker twice over, each the production binary
// configured as docker-compose.yml configures it. It plays the checker's
// workload through the balancer, breaks one thing after another under
// that load and checks after each that nothing was lost or doubled, no
// seq reused, receipts applied, verify clean and every group caught up.
//
//	go run ./bench/cluster [-short] [-json] [-serve]
//
// Progress goes to stderr; with -json the last line on stdout is the
// result. -serve leaves the cluster serving (for a person) until
// interrupted.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"log"
	"os"
	"os/signal"
	"syscall"
	"time"
)

type options struct {
	short    bool
	json     bool
	serve    bool
	dir      string
	masters  int
	apis     int
	brokers  int
	round    time.Duration
	timeout  time.Duration
	capacity string
	compare  string
	// baselineOnly plays the baseline round alone (the capacity model's
	// 1-master comparison).
	baselineOnly bool
	// render writes -capacity from a saved result instead of running.
	render string
}

func main() {
	if len(os.Args) > 1 && os.Args[1] == "kfake" {
		if err := kafkaChild(os.Args[2:]); err != nil {
			fmt.Fprintln(os.Stderr, "cluster kfake:", err)
			os.Exit(1)
		}
		return
	}
	var o options
	flag.BoolVar(&o.short, "short", false, "the short run: 2 API nodes, one API kill and one master failover")
	flag.BoolVar(&o.json, "json", false, "print the result as one JSON line")
	flag.BoolVar(&o.serve, "serve", false, "after the run, leave the cluster serving until interrupted")
	flag.StringVar(&o.dir, "dir", "", "folder for the nodes' data and logs (a temporary one when empty)")
	flag.IntVar(&o.masters, "masters", 3, "Redis Cluster masters (each gets one replica)")
	flag.IntVar(&o.apis, "apis", 0, "API nodes (0: 3, or 2 with -short)")
	flag.IntVar(&o.brokers, "brokers", 3, "Kafka brokers")
	flag.DurationVar(&o.round, "round", 0, "how long each fault round's stream flows (0: 30s, 15s with -short)")
	flag.DurationVar(&o.timeout, "timeout", 20*time.Minute, "the whole run gives up after this")
	flag.StringVar(&o.capacity, "capacity", "", "write the capacity model (markdown) to this file, e.g. docs/capacity.md")
	flag.StringVar(&o.compare, "compare", "", "a 1-master run's JSON output, for the capacity model's comparison")
	flag.BoolVar(&o.baselineOnly, "baseline-only", false, "play only the baseline round, no fault (the 1-master comparison of the capacity model)")
	flag.StringVar(&o.render, "render", "", "write -capacity from this saved -json result (with -compare) instead of running")
	flag.Parse()
	if o.render != "" {
		if err := renderSaved(o); err != nil {
			fmt.Fprintln(os.Stderr, "cluster:", err)
			os.Exit(1)
		}
		return
	}
	if o.apis == 0 {
		o.apis = 3
		if o.short {
			o.apis = 2
		}
	}
	if o.round == 0 {
		o.round = 30 * time.Second
		if o.short {
			o.round = 15 * time.Second
		}
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	logger := log.New(os.Stderr, "cluster: ", log.Ltime)
	res, err := run(ctx, o, logger)
	if err != nil {
		res.Error = err.Error()
		res.OK = false
	}
	if !o.serve || err != nil {
		printResult(o, res)
	}
	if !res.OK {
		os.Exit(1)
	}
}

// printResult prints the result: one JSON line with -json, indented
// without.
func printResult(o options, res result) {
	var b []byte
	if o.json {
		b, _ = json.Marshal(res)
	} else {
		b, _ = json.MarshalIndent(res, "", "  ")
	}
	fmt.Println(string(b))
}
