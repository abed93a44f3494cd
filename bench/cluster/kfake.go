package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/offlinebox/offlinebox/topology"
)

// kafkaChild is `cluster kfake`: the brokers in a process of their own, so
// that every worker reaches them over the network as it would a Kafka
// cluster. It prints its broker addresses on stdout's first line and
// serves its fault controls on -control (loopback):
//
//	POST /down?node=N&for=20s  node N refuses every request and its
//	                           partitions' leadership moves to the others
func kafkaChild(args []string) error {
	fs := flag.NewFlagSet("kfake", flag.ContinueOnError)
	brokers := fs.Int("brokers", 3, "brokers")
	partitions := fs.Int("partitions", 8, "partitions of each topic")
	control := fs.String("control", "127.0.0.1:0", "fault control address")
	if err := fs.Parse(args); err != nil {
		return err
	}
	c, err := kfake.NewCluster(kfake.NumBrokers(*brokers), kfake.SeedTopics(int32(*partitions), topology.Topics()...),
		kfake.BrokerConfigs(map[string]string{"group.consumer.session.timeout.ms": "6000",
			"group.consumer.heartbeat.interval.ms": "1000"}))
	if err != nil {
		return fmt.Errorf("start kfake: %w", err)
	}
	defer c.Close()
	var down atomic.Int32
	down.Store(-1)
	c.Control(func(kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		if n := down.Load(); n >= 0 && c.CurrentNode() == n {
			return nil, errors.New("broker down"), true
		}
		c.DropControl()
		return nil, nil, false
	})
	ln, err := net.Listen("tcp", *control)
	if err != nil {
		return err
	}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /down", func(w http.ResponseWriter, r *http.Request) {
		node, err1 := strconv.Atoi(r.URL.Query().Get("node"))
		d, err2 := time.ParseDuration(r.URL.Query().Get("for"))
		if err1 != nil || err2 != nil || node < 0 || node >= *brokers || d <= 0 || d > 10*time.Minute {
			http.Error(w, "node (0.."+strconv.Itoa(*brokers-1)+") and for (duration up to 10m) are required", http.StatusBadRequest)
			return
		}
		moved := moveLeadership(c, int32(node), int32(*brokers))
		down.Store(int32(node))
		time.AfterFunc(d, func() { down.Store(-1) })
		fmt.Fprintf(w, "node %d down for %s, %d partitions moved\n", node, d, moved)
	})
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	defer srv.Close()
	fmt.Printf("brokers %s control %s\n", joinComma(c.ListenAddrs()), ln.Addr())
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	<-ctx.Done()
	return nil
}

// moveLeadership hands every partition node leads to the next node.
func moveLeadership(c *kfake.Cluster, node, brokers int32) int {
	moved := 0
	for _, t := range topology.Topics() {
		for _, p := range c.PartitionInfos(t) {
			if p == nil || p.Leader != node {
				continue
			}
			if c.MoveTopicPartition(t, p.Partition, (node+1)%brokers) == nil {
				moved++
			}
		}
	}
	return moved
}

func joinComma(ss []string) string {
	out := ""
	for i, s := range ss {
		if i > 0 {
			out += ","
		}
		out += s
	}
	return out
}
