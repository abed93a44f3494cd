package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/offlinebox/offlinebox/auth"
	"github.com/offlinebox/offlinebox/bench/internal/harness"
	"github.com/offlinebox/offlinebox/embedded"
)

// jwtSecret signs the workload's tokens; every API node shares it.
const jwtSecret = "cluster-bench-secret-0123456789abcdef"

// stack is the running cluster.
type stack struct {
	dir        string
	bin        string
	prefix     string
	redis      []*embedded.Process
	redisAddrs []string
	busPorts   []int
	kafka      *proc
	brokers    []string
	control    string
	chAddr     string
	chDB       string
	chShards   []*embedded.Process
	chCluster  string
	// keyring and members (user, conversation) of the round under way,
	// for faults that read as a user.
	keyring  *auth.Keyring
	members  [][2]string
	balancer *proc
	lbURL    string
	apis     []*proc
	apiAddrs []string
	workers  map[string][]*proc
	all      []*proc
}

// startRedis starts 2*masters redis-server nodes in cluster mode and has
// redis-cli make them a cluster of masters with one replica each.
func (s *stack) startRedis(ctx context.Context, masters int) error {
	for i := range 2 * masters {
		ports, err := embedded.FreePorts(2)
		if err != nil {
			return err
		}
		dir := filepath.Join(s.dir, fmt.Sprintf("redis-%d", i))
		_ = os.Remove(filepath.Join(dir, "nodes.conf"))
		n, err := embedded.StartRedis(ctx, embedded.RedisOptions{Dir: dir, Port: ports[0], Args: []string{
			"--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf",
			"--cluster-port", fmt.Sprint(ports[1]), "--cluster-announce-ip", embedded.Loopback,
			"--cluster-node-timeout", "3000", "--save", "", "--appendonly", "no"}})
		if err != nil {
			return fmt.Errorf("redis node %d: %w", i, err)
		}
		s.redis = append(s.redis, n)
		s.busPorts = append(s.busPorts, ports[1])
		s.redisAddrs = append(s.redisAddrs, n.Addr())
	}
	if err := s.formRedis(ctx, masters); err != nil {
		return err
	}
	return s.waitRedisOK(ctx, 2*masters)
}

// formRedis gives the first masters nodes the slots in even ranges, has
// every node meet the first, and makes node masters+i the replica of node
// i (redis-cli --cluster create wants 3 masters at least; the 1-master
// comparison needs one).
func (s *stack) formRedis(ctx context.Context, masters int) error {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	clients := make([]*redis.Client, len(s.redis))
	for i, n := range s.redis {
		clients[i] = redis.NewClient(&redis.Options{Addr: n.Addr(), DialTimeout: 2 * time.Second, ReadTimeout: 5 * time.Second})
		defer clients[i].Close()
	}
	const slots = 16384
	per := slots / masters
	for i := range masters {
		first, last := i*per, (i+1)*per-1
		if i == masters-1 {
			last = slots - 1
		}
		if err := clients[i].ClusterAddSlotsRange(ctx, first, last).Err(); err != nil {
			return fmt.Errorf("redis %s: add slots: %w", s.redis[i].Addr(), err)
		}
	}
	host, port, _ := strings.Cut(s.redis[0].Addr(), ":")
	for i := 1; i < len(clients); i++ {
		if err := clients[i].Do(ctx, "CLUSTER", "MEET", host, port, s.busPorts[0]).Err(); err != nil {
			return fmt.Errorf("redis %s: meet: %w", s.redis[i].Addr(), err)
		}
	}
	for i := range masters {
		id, err := clients[i].ClusterMyID(ctx).Result()
		if err != nil {
			return err
		}
		// A node replicates only a master it already knows of.
		for {
			err = clients[masters+i].ClusterReplicate(ctx, id).Err()
			if err == nil {
				break
			}
			if ctx.Err() != nil {
				return fmt.Errorf("redis %s: replicate %s: %w", s.redis[masters+i].Addr(), id, err)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	return nil
}

// waitRedisOK waits until every running node reports cluster_state:ok.
func (s *stack) waitRedisOK(ctx context.Context, nodes int) error {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	for _, n := range s.redis {
		if n.Pid() == 0 {
			continue
		}
		rdb := redis.NewClient(&redis.Options{Addr: n.Addr(), DialTimeout: 2 * time.Second, ReadTimeout: 2 * time.Second})
		for {
			info, err := rdb.ClusterInfo(ctx).Result()
			if err == nil && strings.Contains(info, "cluster_state:ok") && strings.Contains(info, fmt.Sprintf("cluster_known_nodes:%d", nodes)) {
				break
			}
			if ctx.Err() != nil {
				_ = rdb.Close()
				return fmt.Errorf("redis %s: cluster not ok: %v %q", n.Addr(), err, info)
			}
			time.Sleep(100 * time.Millisecond)
		}
		_ = rdb.Close()
	}
	return nil
}

// startKafka starts the brokers' process (this program, `kfake`) and reads
// its addresses.
func (s *stack) startKafka(ctx context.Context, brokers, partitions int) error {
	self, err := os.Executable()
	if err != nil {
		return err
	}
	p := newProc("kafka", "kafka", s.dir, self, "kfake", "-brokers", fmt.Sprint(brokers), "-partitions", fmt.Sprint(partitions))
	if err := p.Start(); err != nil {
		return err
	}
	// Its first line of output, in its log file, names the brokers.
	s.kafka = p
	s.all = append(s.all, p)
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) && ctx.Err() == nil {
		if line := firstLine(p.LogPath, "brokers "); line != "" {
			f := strings.Fields(line)
			if len(f) == 4 {
				s.brokers, s.control = strings.Split(f[1], ","), f[3]
				return nil
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	return fmt.Errorf("kafka process did not name its brokers (see %s)", p.LogPath)
}

func firstLine(path, prefix string) string {
	return harness.FirstLine(path, func(line string) bool { return strings.HasPrefix(line, prefix) })
}

// common are the settings every production process shares, as
// docker-compose.yml passes them (OFFLINEBOX_* variables).
func (s *stack) common() []string {
	return []string{
		"OFFLINEBOX_KAFKA=" + strings.Join(s.brokers, ","),
		"OFFLINEBOX_REDIS=" + strings.Join(s.redisAddrs, ","),
		"OFFLINEBOX_REDIS_CLUSTER=1",
		"OFFLINEBOX_CLICKHOUSE=" + s.chAddr,
		"OFFLINEBOX_CLICKHOUSE_DB=" + s.chDB,
		"OFFLINEBOX_CLICKHOUSE_CLUSTER=" + s.chCluster,
		"OFFLINEBOX_PREFIX=" + s.prefix,
		"OFFLINEBOX_JWT_SECRET=" + jwtSecret,
		"OFFLINEBOX_LOG_FORMAT=json",
	}
}

// run starts one production process of kind.
func (s *stack) run(kind, name string, args ...string) (*proc, error) {
	// Each process's /metrics would want a port of its own; the bench
	// reads CPU and memory from /proc instead.
	p := newProc(kind, name, s.dir, s.bin, append([]string{kind, "-metrics-listen="}, args...)...)
	p.Env = s.common()
	if err := p.Start(); err != nil {
		return nil, err
	}
	s.all = append(s.all, p)
	return p, nil
}

// migrate creates the topics and the ClickHouse schema, as the compose
// file's migrate service does.
func (s *stack) migrate(ctx context.Context) error {
	cctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(cctx, s.bin, "migrate")
	cmd.Env = append(os.Environ(), s.common()...)
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("offlinebox migrate: %w\n%s", err, out)
	}
	return nil
}

// startAPIs starts n API processes and the balancer in front of them.
func (s *stack) startAPIs(ctx context.Context, n int) error {
	ports, err := embedded.FreePorts(n + 1)
	if err != nil {
		return err
	}
	for i := range n {
		addr := fmt.Sprintf("127.0.0.1:%d", ports[i])
		p, err := s.run("api", fmt.Sprintf("api-%d", i), "-listen", addr, "-node", fmt.Sprintf("api-%d", i))
		if err != nil {
			return err
		}
		s.apis = append(s.apis, p)
		s.apiAddrs = append(s.apiAddrs, addr)
	}
	for _, a := range s.apiAddrs {
		if err := harness.WaitOK(ctx, "http://"+a+"/healthz", time.Minute); err != nil {
			return err
		}
	}
	lb := fmt.Sprintf("127.0.0.1:%d", ports[n])
	cfg := filepath.Join(s.dir, "haproxy.cfg")
	if err := os.WriteFile(cfg, []byte(haproxyConfig(lb, s.apiAddrs)), 0o644); err != nil {
		return err
	}
	s.balancer = newProc("balancer", "haproxy", s.dir, "haproxy", "-db", "-f", cfg)
	if err := s.balancer.Start(); err != nil {
		return err
	}
	s.all = append(s.all, s.balancer)
	s.lbURL = "http://" + lb
	return harness.WaitOK(ctx, s.lbURL+"/healthz", 30*time.Second)
}

// stop takes everything down, API nodes and workers first.
func (s *stack) stop() {
	for i := len(s.all) - 1; i >= 0; i-- {
		s.all[i].Stop(5 * time.Second)
	}
	for _, n := range s.redis {
		_ = n.Stop(context.Background())
	}
	for _, p := range s.chShards {
		_ = p.Stop(context.Background())
	}
}
