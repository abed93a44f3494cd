// Command live measures the live channel: devices online over two API
// processes receive a steady stream of group and direct messages pushed
// through the pipeline (fanout → im.sequenced → push stage → the node
// holding each device → WebSocket), ack what they store, and the same
// devices then poll POST /v1/sync every second instead (the pull-only
// design), on the same stream, in the same run.
//
// It reports push latency from produce to device receipt (p50, p99),
// deliveries per second, memory per idle connection, re-pushes, the
// polling latency, and server CPU per delivered message in both designs
// (the two API processes, the push stage and redis-server; fanout is the
// same in both and not counted).
//
//	go run ./bench/live [--devices 2000] [--seconds 20] [--json]
package main

import (
	"context"
	"encoding/binary"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/twmb/franz-go/pkg/kgo"
	"google.golang.org/protobuf/proto"

	"github.com/offlinebox/offlinebox/auth"
	"github.com/offlinebox/offlinebox/bench/internal/harness"
	"github.com/offlinebox/offlinebox/client"
	"github.com/offlinebox/offlinebox/redisstore"
	"github.com/offlinebox/offlinebox/schemas"
	"github.com/offlinebox/offlinebox/workers/fanout"
)

type options struct {
	devices     int
	groupSize   int
	groups      int
	seconds     float64
	groupRate   float64
	directRate  float64
	largeRate   float64
	threshold   int
	bodyBytes   int
	ackEvery    time.Duration
	pollEvery   time.Duration
	partitions  int
	skipPolling bool
	pipeline    bool
	profileDir  string
	rates       []float64
	writeDelay  time.Duration
}

func main() {
	if harness.AsChild(childEnv, "live server", runChild) {
		return
	}
	var o options
	var rates string
	f := harness.Parse("live", harness.ScaleFull, func(fs *flag.FlagSet) {
		fs.IntVar(&o.devices, "devices", 2000, "online devices (one per user), spread over two API processes")
		fs.IntVar(&o.groups, "groups", 20, "groups")
		fs.IntVar(&o.groupSize, "group-size", 100, "members per group")
		fs.Float64Var(&o.seconds, "seconds", 20, "length of each measured phase")
		fs.Float64Var(&o.groupRate, "group-rate", 40, "group messages per second (each to every member)")
		fs.Float64Var(&o.directRate, "direct-rate", 200, "direct messages per second")
		fs.Float64Var(&o.largeRate, "large-rate", 0.5, "messages per second to one large group of every device (0: none)")
		fs.IntVar(&o.threshold, "large-threshold", 1000, "large-group threshold of the run (the large group is above it)")
		fs.IntVar(&o.bodyBytes, "body-bytes", 225, "message body size")
		fs.DurationVar(&o.ackEvery, "ack-every", time.Second, "how often a device acks what it stored (batched)")
		fs.DurationVar(&o.pollEvery, "poll-every", time.Second, "polling interval of the pull-only design")
		fs.IntVar(&o.partitions, "partitions", 8, "partitions of each topic (embedded Kafka)")
		fs.BoolVar(&o.skipPolling, "skip-polling", false, "measure the live channel only")
		fs.BoolVar(&o.pipeline, "pipeline-phase", true, "first measure the servers' CPU for the same stream with no device online")
		fs.StringVar(&o.profileDir, "profile-dir", "", "write each API process's CPU and allocation profiles of each measured phase here (PHASE-NODE.cpu.pprof, PHASE-NODE.allocs.pprof)")
		fs.DurationVar(&o.writeDelay, "write-delay", 0, "the API nodes' live write delay (0: the default, negative: none)")
		fs.StringVar(&rates, "rates", "", "after the push phase, a ramp: publications per second of each step, comma-separated (e.g. 50,200,1000,2000), 80 % direct and 20 % to the groups, none to the large group")
	})
	var err error
	if o.rates, err = parseRates(rates); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	o.devices = f.Scaled(o.devices, 20)
	o.groupRate, o.directRate = o.groupRate*f.Scale, o.directRate*f.Scale
	o.groups = max(1, min(o.groups, o.devices/max(o.groupSize, 1)))
	harness.RunOnStack("live", f, harness.Needs{Kafka: true, Partitions: int32(o.partitions)},
		func(ctx context.Context, log *harness.Log, st *harness.Stack) error { return run(ctx, f, o, log, st) })
}

type bench struct {
	f        *harness.Flags
	o        options
	log      *harness.Log
	st       *harness.Stack
	kr       *auth.Keyring
	prod     *kgo.Client
	servers  []*harness.Child
	redisPid int
	users    []string
	groups   [][]string
	bodies   *harness.Bodies
	fan      *harness.Fanout
	records  int64 // produced so far (seed and streams)
}

func run(ctx context.Context, f *harness.Flags, o options, log *harness.Log, st *harness.Stack) error {
	b := &bench{f: f, o: o, log: log, st: st, bodies: harness.NewBodies(f.Seed)}
	var err error
	if b.kr, err = auth.New(auth.Config{Secret: []byte(secret), TTL: 24 * time.Hour}); err != nil {
		return err
	}
	if b.prod, err = harness.NewProducer(st); err != nil {
		return err
	}
	defer b.prod.Close()
	b.redisPid = redisPid(ctx, st.Redis)
	storeCfg := redisstore.Config{Prefix: f.Prefix, LargeGroupThreshold: o.threshold}
	fan, err := harness.StartFanout(st, fanout.Config{Store: storeCfg})
	if err != nil {
		return err
	}
	defer fan.Stop()
	b.fan = fan
	for i, node := range []string{"node-a", "node-b"} {
		c, err := startChild(ctx, childConfig{Redis: st.RedisAddr, Brokers: strings.Join(st.Brokers, ","), Prefix: f.Prefix,
			Node: node, Push: i == 0, Threshold: o.threshold, WriteDelay: o.writeDelay})
		if err != nil {
			return err
		}
		defer c.Stop()
		b.servers = append(b.servers, c)
	}
	log.Printf("servers: %s (pid %d, with the push stage), %s (pid %d); redis-server pid %d; profiles at /debug/pprof/profile",
		b.servers[0].URL, b.servers[0].Pid, b.servers[1].URL, b.servers[1].Pid, b.redisPid)
	seeded, err := b.seed(ctx)
	if err != nil {
		return err
	}
	b.records = int64(seeded)
	if err := fan.WaitHandled(ctx, int64(seeded), "seed", log); err != nil {
		return err
	}
	res := &result{Benchmark: "live", Scale: f.Scale, Notes: notes(), Machine: harness.ThisMachine(), Devices: o.devices, Groups: len(b.groups),
		GroupSize: o.groupSize, BodyBytes: o.bodyBytes, Seconds: o.seconds, Embedded: st.Embedded,
		LargeThreshold: o.threshold}
	if o.pipeline {
		if err := b.measurePipeline(ctx, res); err != nil {
			return err
		}
	}
	if err := b.measurePush(ctx, res); err != nil {
		return err
	}
	if !o.skipPolling {
		if err := b.measurePoll(ctx, res); err != nil {
			return err
		}
	}
	res.finish()
	res.Table = printTable(res)
	return harness.EmitJSON(f.JSON, res)
}

// redisPid asks the server for its process id (to read its CPU).
func redisPid(ctx context.Context, rdb *redis.Client) int {
	info, err := rdb.Info(ctx, "server").Result()
	if err != nil {
		return 0
	}
	for _, l := range strings.Split(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(l), "process_id:"); ok {
			var pid int
			fmt.Sscan(v, &pid)
			return pid
		}
	}
	return 0
}

func (b *bench) user(i int) string { return fmt.Sprintf("u%05d", i) }
func directOf(i int) string        { return fmt.Sprintf("dm-%05d", i/2) }

// seed creates the groups, the direct conversations (one message each) and
// the large group.
func (b *bench) seed(ctx context.Context) (int, error) {
	o := b.o
	for i := 0; i < o.devices; i++ {
		b.users = append(b.users, b.user(i))
	}
	var msgs []*schemas.Message
	for g := 0; g < o.groups; g++ {
		var mem []string
		for k := 0; k < o.groupSize; k++ {
			mem = append(mem, b.users[(g*o.groupSize+k)%len(b.users)])
		}
		b.groups = append(b.groups, mem)
		msgs = append(msgs, &schemas.Message{ClientMsgId: fmt.Sprintf("g%02d-create", g), ConvId: fmt.Sprintf("g%02d", g),
			ConvType: schemas.ConvType_CONV_TYPE_GROUP, Sender: mem[0], Kind: schemas.Kind_KIND_MEMBER_JOIN, Recipients: mem})
	}
	for i := 0; i+1 < len(b.users); i += 2 {
		msgs = append(msgs, b.direct(i, "hello"))
	}
	if o.largeRate > 0 {
		msgs = append(msgs, &schemas.Message{ClientMsgId: "big-create", ConvId: "big", ConvType: schemas.ConvType_CONV_TYPE_GROUP,
			Sender: b.users[0], Kind: schemas.Kind_KIND_MEMBER_JOIN, Recipients: b.users})
	}
	b.log.Printf("seed: %d users, %d groups of %d, %d direct conversations, large group %v", len(b.users), len(b.groups),
		o.groupSize, len(b.users)/2, o.largeRate > 0)
	return len(msgs), harness.Produce(ctx, b.prod, msgs)
}

var msgCounter int64

func (b *bench) body() []byte {
	body := make([]byte, b.o.bodyBytes)
	copy(body[8:], b.bodies.Next())
	binary.BigEndian.PutUint64(body, uint64(time.Now().UnixNano()))
	return body
}

func (b *bench) direct(i int, tag string) *schemas.Message {
	msgCounter++
	peer := i ^ 1
	return &schemas.Message{ClientMsgId: fmt.Sprintf("%s-%d", tag, msgCounter), ConvId: directOf(i),
		ConvType: schemas.ConvType_CONV_TYPE_DIRECT, Sender: b.users[i], Recipients: []string{b.users[peer]},
		Kind: schemas.Kind_KIND_MESSAGE, ContentType: "application/octet-stream", Body: b.body()}
}

// stream produces the steady load for d and returns how many deliveries
// it means (every member's device, the sender's included).
func (b *bench) stream(ctx context.Context, d time.Duration, tag string) (int64, error) {
	o := b.o
	var expected int64
	var owed [3]float64
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	end := time.Now().Add(d)
	var mu sync.Mutex
	var firstErr error
	for now := time.Now(); now.Before(end); now = time.Now() {
		select {
		case <-ctx.Done():
			return expected, ctx.Err()
		case <-tick.C:
		}
		owed[0] += o.groupRate / 100
		owed[1] += o.directRate / 100
		owed[2] += o.largeRate / 100
		var recs []*kgo.Record
		add := func(m *schemas.Message) {
			v, _ := proto.Marshal(m)
			recs = append(recs, &kgo.Record{Topic: schemas.TopicMessages, Key: []byte(m.ConvId), Value: v})
		}
		for ; owed[0] >= 1; owed[0]-- {
			g := b.bodies.Intn(len(b.groups))
			mem := b.groups[g]
			msgCounter++
			add(&schemas.Message{ClientMsgId: fmt.Sprintf("%s-%d", tag, msgCounter), ConvId: fmt.Sprintf("g%02d", g),
				ConvType: schemas.ConvType_CONV_TYPE_GROUP, Sender: mem[b.bodies.Intn(len(mem))], Kind: schemas.Kind_KIND_MESSAGE,
				ContentType: "application/octet-stream", Body: b.body()})
			expected += int64(len(mem))
		}
		for ; owed[1] >= 1; owed[1]-- {
			add(b.direct(b.bodies.Intn(len(b.users)/2)*2, tag))
			expected += 2
		}
		for ; owed[2] >= 1; owed[2]-- {
			msgCounter++
			add(&schemas.Message{ClientMsgId: fmt.Sprintf("%s-%d", tag, msgCounter), ConvId: "big",
				ConvType: schemas.ConvType_CONV_TYPE_GROUP, Sender: b.users[b.bodies.Intn(len(b.users))], Kind: schemas.Kind_KIND_MESSAGE,
				ContentType: "application/octet-stream", Body: b.body()})
			expected += int64(len(b.users))
		}
		b.records += int64(len(recs))
		for _, r := range recs {
			b.prod.Produce(ctx, r, func(_ *kgo.Record, err error) {
				if err != nil {
					mu.Lock()
					if firstErr == nil {
						firstErr = err
					}
					mu.Unlock()
				}
			})
		}
	}
	if err := b.prod.Flush(ctx); err != nil {
		return expected, err
	}
	mu.Lock()
	defer mu.Unlock()
	return expected, firstErr
}

func (b *bench) clientOf(i int) (*client.Client, error) {
	tok, err := b.kr.Mint(b.users[i], "d", 24*time.Hour)
	if err != nil {
		return nil, err
	}
	return client.New(b.servers[i%len(b.servers)].URL, tok, nil), nil
}

// cpu is the servers' CPU so far: the API processes (push stage inside
// the first) and redis-server.
func (b *bench) cpu() time.Duration {
	var t time.Duration
	for _, s := range b.servers {
		t += procCPU(s.Pid)
	}
	if b.redisPid > 0 {
		t += procCPU(b.redisPid)
	}
	return t
}

// rss is the API processes' resident memory after a collection.
func (b *bench) rss() int64 {
	var n int64
	for _, s := range b.servers {
		if resp, err := (&http.Client{Timeout: 30 * time.Second}).Post(s.URL+"/debug/free", "", nil); err == nil {
			data, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			b.log.Printf("server %d memory: %s, rss %d", s.Pid, data, harness.ProcessRSS(s.Pid))
		}
		n += harness.ProcessRSS(s.Pid)
	}
	return n
}

// cpuParts is each server process's CPU so far.
func (b *bench) cpuParts() map[string]time.Duration {
	out := map[string]time.Duration{"redis": procCPU(b.redisPid)}
	for i, s := range b.servers {
		out[fmt.Sprintf("api%d", i)] = procCPU(s.Pid)
	}
	return out
}
