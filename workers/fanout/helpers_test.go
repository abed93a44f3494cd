package fanout

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/twmb/franz-go/pkg/kgo"
	"google.golang.org/protobuf/proto"

	"github.com/offlinebox/offlinebox/internal/testenv"
	"github.com/offlinebox/offlinebox/redisstore"
	"github.com/offlinebox/offlinebox/schemas"
	"github.com/offlinebox/offlinebox/seal"
	"github.com/offlinebox/offlinebox/stream"
)

// harness is a fanout over a real redis-server and a kfake broker.
type harness struct {
	t      *testing.T
	rdb    redis.UniversalClient
	store  *redisstore.Store
	prefix string
	addrs  []string
	cfg    Config
}

func newHarness(t *testing.T, cfg Config) *harness {
	t.Helper()
	rdb, prefix := testenv.Redis(t)
	_, addrs := testenv.Kafka(t, 4, schemas.TopicMessages, schemas.TopicSequenced, schemas.TopicDeadLetter)
	return newHarnessOn(t, rdb, prefix, addrs, cfg)
}

func newHarnessOn(t *testing.T, rdb redis.UniversalClient, prefix string, addrs []string, cfg Config) *harness {
	t.Helper()
	cfg.Store.Prefix = prefix
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelWarn}))
	}
	store, err := redisstore.New(rdb, cfg.Store)
	if err != nil {
		t.Fatal(err)
	}
	return &harness{t: t, rdb: rdb, store: store, prefix: prefix, addrs: addrs, cfg: cfg}
}

// fanout builds a worker on the harness's stores; rdb overrides the
// client (to put a hook on it) when set.
func (h *harness) fanout(rdb redis.UniversalClient) *Fanout {
	h.t.Helper()
	return h.fanoutWith(rdb, h.cfg)
}

// fanoutWith builds a worker with its own configuration.
func (h *harness) fanoutWith(rdb redis.UniversalClient, cfg Config) *Fanout {
	h.t.Helper()
	if rdb == nil {
		rdb = h.rdb
	}
	prod, err := stream.NewProducer(h.addrs)
	if err != nil {
		h.t.Fatal(err)
	}
	h.t.Cleanup(prod.Close)
	if cfg.Brokers == nil {
		cfg.Brokers = h.addrs
	}
	f, err := New(cfg, rdb, prod)
	if err != nil {
		h.t.Fatal(err)
	}
	h.t.Cleanup(f.Close)
	return f
}

// handle runs one Handle call and fails the test on error.
func handle(t *testing.T, f *Fanout, recs []*kgo.Record) []stream.DeadLetter {
	t.Helper()
	dead, err := f.Handle(context.Background(), recs)
	if err != nil {
		t.Fatalf("Handle: %v", err)
	}
	return dead
}

// Message builders.

func msg(conv, id, sender string, opts ...func(*schemas.Message)) *schemas.Message {
	m := &schemas.Message{ClientMsgId: id, ConvId: conv, ConvType: schemas.ConvType_CONV_TYPE_GROUP,
		Sender: sender, Kind: schemas.Kind_KIND_MESSAGE, ContentType: "text/plain", Body: []byte("body of " + id)}
	for _, o := range opts {
		o(m)
	}
	return m
}

func to(peer string) func(*schemas.Message) {
	return func(m *schemas.Message) {
		m.ConvType, m.Recipients = schemas.ConvType_CONV_TYPE_DIRECT, []string{peer}
	}
}

func mentions(users ...string) func(*schemas.Message) {
	return func(m *schemas.Message) { m.Mentions = users }
}

func mentionAll(m *schemas.Message) { m.MentionAll = true }

func qos0(m *schemas.Message) { m.Qos = schemas.QoS_QOS_AT_MOST_ONCE }

func join(users ...string) func(*schemas.Message) {
	return func(m *schemas.Message) { m.Kind, m.Recipients, m.Body = schemas.Kind_KIND_MEMBER_JOIN, users, nil }
}

func leave(users ...string) func(*schemas.Message) {
	return func(m *schemas.Message) { m.Kind, m.Recipients, m.Body = schemas.Kind_KIND_MEMBER_LEAVE, users, nil }
}

func record(m *schemas.Message) *kgo.Record {
	v, err := proto.Marshal(m)
	if err != nil {
		panic(err)
	}
	// Read from the partition its conversation hashes to, of the
	// harness's four, as the default partitioner puts it there.
	return &kgo.Record{Topic: schemas.TopicMessages, Key: []byte(m.GetConvId()), Value: v,
		Partition: stream.KeyPartition([]byte(m.GetConvId()), 4)}
}

func records(ms ...*schemas.Message) []*kgo.Record {
	out := make([]*kgo.Record, len(ms))
	for i, m := range ms {
		out[i] = record(m)
	}
	return out
}

func users(prefix string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("%s%03d", prefix, i)
	}
	return out
}

// truth is what a conversation's inboxes must say, recounted from its
// timeline alone.
type truth struct {
	seq       uint64
	largeFrom uint64
	// delivered[u] are the records that reached u, in seq order.
	delivered map[string][]delivery
}

type delivery struct {
	seq     uint64
	own     bool
	mention bool // explicit, or @all while the group was not large
}

// recount replays the conversation's timeline: it checks the timeline is
// contiguous from 1 with no client_msg_id twice, replays membership, and
// lists what reached whom.
func (h *harness) recount(conv string) truth {
	t := h.t
	t.Helper()
	ctx := context.Background()
	k := h.store.Keys()
	meta, err := h.rdb.HGetAll(ctx, k.ConvMeta(conv)).Result()
	if err != nil {
		t.Fatal(err)
	}
	raw, err := h.rdb.LRange(ctx, k.Timeline(conv), 0, -1).Result()
	if err != nil {
		t.Fatal(err)
	}
	tr := truth{delivered: map[string][]delivery{}}
	tr.seq, _ = strconv.ParseUint(meta["seq"], 10, 64)
	tr.largeFrom, _ = strconv.ParseUint(meta["lgs"], 10, 64)
	if meta["first"] != "1" || uint64(len(raw)) != tr.seq {
		t.Fatalf("%s: timeline holds %d entries from %s, meta seq %d: not contiguous", conv, len(raw), meta["first"], tr.seq)
	}
	mem := map[string]uint64{}
	ids := map[string]bool{}
	for i, r := range raw {
		sq, err := redisstore.DecodeEntry([]byte(r), conv, 0)
		if err != nil {
			t.Fatal(err)
		}
		s, m := sq.GetSeq(), sq.GetMessage()
		if s != uint64(i+1) {
			t.Fatalf("%s: element %d holds seq %d", conv, i, s)
		}
		if ids[m.GetClientMsgId()] {
			t.Fatalf("%s: client_msg_id %s sequenced twice", conv, m.GetClientMsgId())
		}
		ids[m.GetClientMsgId()] = true
		applyMembership(mem, m, s)
		for u, j := range mem {
			if j >= s {
				continue
			}
			d := delivery{seq: s, own: u == m.GetSender()}
			if m.GetKind() == schemas.Kind_KIND_MESSAGE && !d.own {
				d.mention = slices.Contains(m.GetMentions(), u) ||
					(m.GetMentionAll() && (tr.largeFrom == 0 || s < tr.largeFrom))
			}
			tr.delivered[u] = append(tr.delivered[u], d)
		}
	}
	return tr
}

func applyMembership(mem map[string]uint64, m *schemas.Message, s uint64) {
	switch m.GetKind() {
	case schemas.Kind_KIND_MEMBER_JOIN:
		at := s
		if s == 1 {
			at = 0
		}
		for _, u := range m.GetRecipients() {
			if _, ok := mem[u]; !ok {
				mem[u] = at
			}
		}
	case schemas.Kind_KIND_MEMBER_LEAVE:
		for _, u := range m.GetRecipients() {
			delete(mem, u)
		}
	default:
		if m.GetConvType() == schemas.ConvType_CONV_TYPE_DIRECT && len(mem) == 0 {
			mem[m.GetSender()], mem[m.GetRecipients()[0]] = 0, 0
		}
	}
}

// checkInboxes proves "unread is true" and "mentions are never lost" for
// conv: every user's unread equals the recount (stored, or derived for
// large-group members), and the mention lane holds exactly the unread
// mentions (large-group @all: one reference on the conversation).
func (h *harness) checkInboxes(conv string) truth {
	t := h.t
	t.Helper()
	ctx := context.Background()
	k := h.store.Keys()
	tr := h.recount(conv)
	for u, ds := range tr.delivered {
		ib, err := h.rdb.HGetAll(ctx, k.Inbox(u)).Result()
		if err != nil {
			t.Fatal(err)
		}
		read, _ := strconv.ParseUint(ib[conv+":r"], 10, 64)
		var want int
		var wantLane []string
		for _, d := range ds {
			if d.seq > read && !d.own {
				want++
			}
			if d.mention && d.seq > read {
				wantLane = append(wantLane, redisstore.MentionMember(conv, d.seq))
			}
		}
		large := ib[conv+":t"] == string(redisstore.InboxLarge)
		last, _ := strconv.Atoi(ib[conv+":l"])
		got := max(0, last-int(read))
		if large {
			got = int(tr.seq - read)
		}
		if got != want {
			t.Errorf("%s/%s: unread %d (large %v, inbox %v), recount says %d", conv, u, got, large, ib, want)
		}
		lane, err := h.rdb.ZRange(ctx, k.Mentions(u), 0, -1).Result()
		if err != nil {
			t.Fatal(err)
		}
		lane = slices.DeleteFunc(lane, func(m string) bool { return !strings.HasPrefix(m, conv+":") })
		slices.Sort(lane)
		slices.Sort(wantLane)
		if !slices.Equal(lane, wantLane) {
			t.Errorf("%s/%s: mention lane %v, want %v", conv, u, lane, wantLane)
		}
	}
	return tr
}

// redisCalls counts the script calls a client makes, by the first key's
// kind, and the most pipelines in flight at once.
type redisCalls struct {
	mu          sync.Mutex
	sequence    int
	inboxCalls  int            // inbox script calls
	inbox       map[string]int // inbox updates per user (an :ib key)
	inflight    int
	maxInflight int
	hold        time.Duration // each pipeline waits this long, to overlap them
}

func newRedisCalls() *redisCalls { return &redisCalls{inbox: map[string]int{}} }

func (c *redisCalls) DialHook(next redis.DialHook) redis.DialHook { return next }

func (c *redisCalls) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		c.count(cmd)
		return next(ctx, cmd)
	}
}

func (c *redisCalls) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		c.mu.Lock()
		c.inflight++
		c.maxInflight = max(c.maxInflight, c.inflight)
		c.mu.Unlock()
		for _, cmd := range cmds {
			c.count(cmd)
		}
		time.Sleep(c.hold)
		err := next(ctx, cmds)
		c.mu.Lock()
		c.inflight--
		c.mu.Unlock()
		return err
	}
}

func (c *redisCalls) count(cmd redis.Cmder) {
	if name := cmd.Name(); name != "evalsha" && name != "eval" {
		return
	}
	args := cmd.Args()
	if len(args) < 4 {
		return
	}
	key := fmt.Sprint(args[3])
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case strings.HasSuffix(key, ":meta") && strings.Contains(key, "{c:"):
		c.sequence++
	case strings.HasSuffix(key, ":ib"):
		c.inboxCalls++
		for _, k := range inboxKeysOf(cmd) {
			c.inbox[k]++
		}
	}
}

// inboxKeysOf lists the inbox keys (:ib) among a script call's KEYS: one
// per inbox update of the call.
func inboxKeysOf(cmd redis.Cmder) []string {
	args := cmd.Args()
	if len(args) < 3 {
		return nil
	}
	n, err := strconv.Atoi(fmt.Sprint(args[2]))
	if err != nil {
		return nil
	}
	var out []string
	for _, a := range args[3:min(3+n, len(args))] {
		if k := fmt.Sprint(a); strings.HasSuffix(k, ":ib") {
			out = append(out, k)
		}
	}
	return out
}

func (c *redisCalls) reset() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.sequence, c.inboxCalls, c.inbox, c.maxInflight = 0, 0, map[string]int{}, 0
}

// redisstoreConfigLarge is a store configuration with a small large-group
// threshold.
func redisstoreConfigLarge(threshold int) redisstore.Config {
	return redisstore.Config{LargeGroupThreshold: threshold}
}

// sealTestRing is a key ring of one fresh master key.
func sealTestRing(t *testing.T) *seal.FileRing {
	t.Helper()
	k, err := seal.GenerateMasterKey("m1")
	if err != nil {
		t.Fatal(err)
	}
	ring, err := seal.NewFileRing([]seal.MasterKey{k})
	if err != nil {
		t.Fatal(err)
	}
	return ring
}
