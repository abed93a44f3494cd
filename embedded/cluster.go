package embedded

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// clusterSlots is the number of hash slots of a Redis Cluster.
const clusterSlots = 16384

// Cluster is a Redis Cluster of master-only redis-server children, one
// folder each, with the hash slots split evenly between them.
type Cluster struct {
	nodes []*Process
}

// Addrs are the nodes' addresses, for redis.ClusterOptions.Addrs.
func (c *Cluster) Addrs() []string {
	addrs := make([]string, len(c.nodes))
	for i, n := range c.nodes {
		addrs[i] = n.Addr()
	}
	return addrs
}

// Nodes are the cluster's processes, for fault tests that stop one.
func (c *Cluster) Nodes() []*Process { return c.nodes }

// Stop stops every node; stopping a stopped cluster does nothing.
func (c *Cluster) Stop(ctx context.Context) error {
	var errs []error
	for _, n := range c.nodes {
		errs = append(errs, n.Stop(ctx))
	}
	return errors.Join(errs...)
}

// StartRedisCluster starts masters redis-server children in cluster mode
// under dir (node-0, node-1, ...), assigns the slots, introduces the nodes
// to each other and waits for cluster_state:ok on every node. Each start
// builds a fresh cluster: node identities left in dir are discarded. The
// nodes keep no data on disk and are stopped when ctx ends.
func StartRedisCluster(ctx context.Context, dir string, masters int) (*Cluster, error) {
	if masters < 1 || masters > 64 {
		return nil, fmt.Errorf("embedded: cluster masters %d is not in 1..64", masters)
	}
	ports, err := FreePorts(2 * masters)
	if err != nil {
		return nil, err
	}
	c := &Cluster{}
	for i := range masters {
		nodeDir := filepath.Join(dir, fmt.Sprintf("node-%d", i))
		if err := os.Remove(filepath.Join(nodeDir, "nodes.conf")); err != nil && !errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("reset cluster node %d: %w", i, err)
		}
		n, err := StartRedis(ctx, RedisOptions{
			Dir:  nodeDir,
			Port: ports[2*i],
			Args: []string{
				"--cluster-enabled", "yes",
				"--cluster-config-file", "nodes.conf",
				"--cluster-port", fmt.Sprint(ports[2*i+1]),
				"--cluster-announce-ip", Loopback,
				"--cluster-node-timeout", "5000",
			},
		})
		if err != nil {
			_ = c.Stop(context.Background())
			return nil, fmt.Errorf("start cluster node %d: %w", i, err)
		}
		c.nodes = append(c.nodes, n)
	}
	if err := c.form(ctx, ports); err != nil {
		_ = c.Stop(context.Background())
		return nil, err
	}
	return c, nil
}

// form assigns each node its slot range, has node 0 meet the others, and
// waits until every node sees a healthy cluster of all nodes.
func (c *Cluster) form(ctx context.Context, ports []int) error {
	ctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	clients := make([]*redis.Client, len(c.nodes))
	for i, n := range c.nodes {
		clients[i] = redis.NewClient(&redis.Options{Addr: n.Addr(), DialTimeout: 2 * time.Second, ReadTimeout: 2 * time.Second})
		defer clients[i].Close()
	}
	per := clusterSlots / len(c.nodes)
	for i, rdb := range clients {
		first, last := i*per, (i+1)*per-1
		if i == len(clients)-1 {
			last = clusterSlots - 1
		}
		if err := rdb.ClusterAddSlotsRange(ctx, first, last).Err(); err != nil {
			return fmt.Errorf("cluster node %s: add slots %d-%d: %w", c.nodes[i].Addr(), first, last, err)
		}
	}
	for i := 1; i < len(clients); i++ {
		err := clients[0].Do(ctx, "CLUSTER", "MEET", Loopback, ports[2*i], ports[2*i+1]).Err()
		if err != nil {
			return fmt.Errorf("cluster meet %s: %w", c.nodes[i].Addr(), err)
		}
	}
	for i, rdb := range clients {
		if err := waitClusterOK(ctx, rdb, len(c.nodes)); err != nil {
			return fmt.Errorf("cluster node %s: %w", c.nodes[i].Addr(), err)
		}
	}
	return nil
}

// waitClusterOK polls CLUSTER INFO until the node reports state ok and
// knows every node.
func waitClusterOK(ctx context.Context, rdb *redis.Client, nodes int) error {
	want := fmt.Sprintf("cluster_known_nodes:%d\r\n", nodes)
	var info string
	for {
		var err error
		info, err = rdb.ClusterInfo(ctx).Result()
		if err == nil && strings.Contains(info, "cluster_state:ok") && strings.Contains(info, want) {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("cluster not ok: %w (last CLUSTER INFO: %q, err %v)", ctx.Err(), firstLines(info, 3), err)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func firstLines(s string, n int) string {
	lines := strings.SplitN(s, "\n", n+1)
	if len(lines) > n {
		lines = lines[:n]
	}
	return strings.TrimSpace(strings.Join(lines, " "))
}
