package api

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kgo"
	"google.golang.org/protobuf/proto"

	"github.com/offlinebox/offlinebox/auth"
	"github.com/offlinebox/offlinebox/edge"
	"github.com/offlinebox/offlinebox/internal/testenv"
	"github.com/offlinebox/offlinebox/redisstore"
	"github.com/offlinebox/offlinebox/schemas"
	"github.com/offlinebox/offlinebox/stream"
	"github.com/offlinebox/offlinebox/workers/convindex"
	"github.com/offlinebox/offlinebox/workers/fanout"
)

var testSecret = []byte("test-secret-of-at-least-32-bytes!")

// env is the API over a real redis-server and a kfake broker, with the
// fanout and convindex workers running as stream runners: what the tests
// see went through the whole pipeline.
type env struct {
	t        testing.TB
	store    *redisstore.Store
	hot      *redisstore.Store
	router   *redisstore.InboxRouter
	keyring  *auth.Keyring
	producer *kgo.Client
	addrs    []string
	srv      *httptest.Server
	server   *Server
	storeCfg redisstore.Config
}

type envOptions struct {
	cfg       Config
	history   HistoryReader
	threshold int
	// hot gives the API's router a hot store (same server, own prefix).
	hot bool
	// metrics registers the server's metrics.
	metrics prometheus.Registerer
	// leeway is the keyring's tolerance on expiry (auth's default when 0).
	leeway time.Duration
	// ready is the process's readiness beside Redis (Deps.Ready).
	ready ReadyFunc
}

func newEnv(t testing.TB, o envOptions) *env {
	t.Helper()
	rdb, prefix := testenv.Redis(t)
	_, addrs := testenv.Kafka(t, 2, schemas.TopicMessages, schemas.TopicSequenced, schemas.TopicReceipts, schemas.TopicDeadLetter)
	storeCfg := redisstore.Config{Prefix: prefix, LargeGroupThreshold: o.threshold}
	store, err := redisstore.New(rdb, storeCfg)
	if err != nil {
		t.Fatal(err)
	}
	kr, err := auth.New(auth.Config{Secret: testSecret, Leeway: o.leeway})
	if err != nil {
		t.Fatal(err)
	}
	prod, err := stream.NewProducer(addrs)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(prod.Close)
	var hot *redisstore.Store
	if o.hot {
		hotRDB, hotPrefix := testenv.Redis(t)
		if hot, err = redisstore.New(hotRDB, redisstore.Config{Prefix: hotPrefix}); err != nil {
			t.Fatal(err)
		}
	}
	e := &env{t: t, store: store, hot: hot, router: redisstore.NewInboxRouter(store, hot, 0), keyring: kr,
		producer: prod, addrs: addrs, storeCfg: storeCfg}
	e.server, err = New(o.cfg, Deps{Router: e.router, Keyring: kr, Producer: prod, History: o.history, Logger: quietLogger(t),
		Metrics: o.metrics, Ready: o.ready})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.server.Close) // it reads the revocation log until then
	// Every answer a test receives is checked against openapi.yaml.
	e.srv = httptest.NewServer(validatingHandler(t, e.server.Handler()))
	t.Cleanup(e.srv.Close)
	return e
}

func quietLogger(t testing.TB) *slog.Logger {
	return slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelWarn}))
}

// runnerConfig is a stream config tuned for kfake (fast heartbeats and
// short waits), as the stream package's own tests use.
func (e *env) runnerConfig(group string, topics ...string) stream.Config {
	return stream.Config{
		Brokers: e.addrs, Group: group, Topics: topics, DeadLetterTopic: schemas.TopicDeadLetter,
		MaxPollRecords: 500, RetryMin: 5 * time.Millisecond, RetryMax: 100 * time.Millisecond,
		CommitInterval: 50 * time.Millisecond, ProduceTimeout: 5 * time.Second, Logger: quietLogger(e.t),
		ExtraOpts: []kgo.Opt{
			kgo.HeartbeatInterval(100 * time.Millisecond),
			kgo.SessionTimeout(6 * time.Second),
			kgo.FetchMaxWait(50 * time.Millisecond),
		},
	}
}

// runPipeline starts fanout and convindex until the test ends.
func (e *env) runPipeline() {
	e.t.Helper()
	f, err := fanout.New(fanout.Config{Store: e.storeCfg, Brokers: e.addrs, Logger: quietLogger(e.t)}, e.store.Client(), e.producer)
	if err != nil {
		e.t.Fatal(err)
	}
	// Cleanups run last first: the runners stop before the pools close.
	e.t.Cleanup(f.Close)
	ix, err := convindex.New(convindex.Config{Logger: quietLogger(e.t)}, e.router)
	if err != nil {
		e.t.Fatal(err)
	}
	e.run(e.runnerConfig("fanout", schemas.TopicMessages), f)
	e.run(e.runnerConfig("convindex", schemas.TopicSequenced, schemas.TopicReceipts), ix)
}

func (e *env) run(cfg stream.Config, h stream.Handler) {
	e.t.Helper()
	r, err := stream.New(cfg, h)
	if err != nil {
		e.t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx) }()
	e.t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil && ctx.Err() == nil {
			e.t.Errorf("runner %s: %v", cfg.Group, err)
		}
		r.Close()
	})
}

// produce writes messages to im.messages as producers do.
func (e *env) produce(ms ...*schemas.Message) {
	e.t.Helper()
	recs := make([]*kgo.Record, len(ms))
	for i, m := range ms {
		v, err := proto.Marshal(m)
		if err != nil {
			e.t.Fatal(err)
		}
		recs[i] = &kgo.Record{Topic: schemas.TopicMessages, Key: []byte(m.ConvId), Value: v}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := e.producer.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		e.t.Fatal(err)
	}
}

func (e *env) token(user, device string) string {
	e.t.Helper()
	tok, err := e.keyring.Mint(user, device, time.Hour)
	if err != nil {
		e.t.Fatal(err)
	}
	return tok
}

// call sends one request; body is JSON-encoded unless it is a string or
// []byte (sent as is).
func (e *env) call(method, path, token string, body any) (int, []byte) {
	e.t.Helper()
	resp, err := http.DefaultClient.Do(e.request(method, path, token, body))
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		e.t.Fatal(err)
	}
	return resp.StatusCode, data
}

// request builds one request as call sends it.
func (e *env) request(method, path, token string, body any) *http.Request {
	e.t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(b)
	case []byte:
		rd = bytes.NewReader(b)
	default:
		data, err := json.Marshal(b)
		if err != nil {
			e.t.Fatal(err)
		}
		rd = bytes.NewReader(data)
	}
	req, err := http.NewRequest(method, e.srv.URL+path, rd)
	if err != nil {
		e.t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	return req
}

// callOK sends a request, requires want, and decodes the answer into out.
func (e *env) callOK(want int, method, path, token string, body, out any) []byte {
	e.t.Helper()
	code, data := e.call(method, path, token, body)
	if code != want {
		e.t.Fatalf("%s %s: status %d, want %d: %s", method, path, code, want, data)
	}
	if out != nil {
		if err := json.Unmarshal(data, out); err != nil {
			e.t.Fatalf("%s %s: decode %s: %v", method, path, data, err)
		}
	}
	return data
}

// eventually polls cond until it holds, failing the test after a generous
// deadline (the pipeline runs asynchronously; this bounds a hang, it does
// not measure speed).
func eventually(t testing.TB, what string, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		ok, state := cond()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s never happened; last state: %s", what, state)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Decoded answers.
type tSync struct {
	DeviceID      string        `json:"device_id"`
	Resync        bool          `json:"resync"`
	Mentions      []tMention    `json:"mentions"`
	MentionsMore  bool          `json:"mentions_more"`
	MentionsNext  string        `json:"mentions_next"`
	Conversations []tSyncConv   `json:"conversations"`
	Summaries     []summaryJSON `json:"summaries"`
	Omitted       int           `json:"omitted"`
}

// mentionsOf is what an answer brings of user's mentions: the lane's, and
// with them those its slices carry (the lane does not repeat them).
func (r tSync) mentionsOf(user string) (lane, all map[string]bool) {
	lane, all = map[string]bool{}, map[string]bool{}
	for _, m := range r.Mentions {
		k := fmt.Sprintf("%s:%d", m.ConvID, m.Message.Seq)
		lane[k], all[k] = true, true
	}
	for _, c := range r.Conversations {
		for _, m := range c.Messages {
			if m.MentionAll || slices.Contains(m.Mentions, user) {
				all[fmt.Sprintf("%s:%d", c.ConvID, m.Seq)] = true
			}
		}
	}
	return lane, all
}

type tMention struct {
	ConvID  string      `json:"conv_id"`
	All     bool        `json:"all"`
	Message messageJSON `json:"message"`
}

type tSyncConv struct {
	ConvID       string        `json:"conv_id"`
	Kind         string        `json:"kind"`
	Large        bool          `json:"large"`
	Epoch        uint64        `json:"epoch"`
	MaxSeq       uint64        `json:"max_seq"`
	Unread       uint64        `json:"unread"`
	HasMore      bool          `json:"has_more"`
	Gap          *gapJSON      `json:"gap"`
	Rebase       bool          `json:"rebase"`
	RebaseReason string        `json:"rebase_reason"`
	Incomplete   bool          `json:"incomplete"`
	Left         bool          `json:"left"`
	Messages     []messageJSON `json:"messages"`
}

type tPage struct {
	ConvID     string        `json:"conv_id"`
	Epoch      uint64        `json:"epoch"`
	ConvType   string        `json:"conv_type"`
	MaxSeq     uint64        `json:"max_seq"`
	FirstSeq   uint64        `json:"first_seq"`
	HasMore    bool          `json:"has_more"`
	Incomplete bool          `json:"incomplete"`
	Messages   []messageJSON `json:"messages"`
}

type tError struct {
	Error errorDetail `json:"error"`
}

// Message builders.
func textMsg(conv, id, sender string, opts ...func(*schemas.Message)) *schemas.Message {
	m := &schemas.Message{ClientMsgId: id, ConvId: conv, ConvType: schemas.ConvType_CONV_TYPE_GROUP, Sender: sender,
		Kind: schemas.Kind_KIND_MESSAGE, ContentType: "text/plain", Body: []byte(fmt.Sprintf("%s says %s", sender, id))}
	for _, o := range opts {
		o(m)
	}
	return m
}

func toPeer(peer string) func(*schemas.Message) {
	return func(m *schemas.Message) {
		m.ConvType, m.Recipients = schemas.ConvType_CONV_TYPE_DIRECT, []string{peer}
	}
}

func mentioning(users ...string) func(*schemas.Message) {
	return func(m *schemas.Message) { m.Mentions = users }
}

func atAll(m *schemas.Message) { m.MentionAll = true }

func founding(conv string, founders ...string) *schemas.Message {
	return &schemas.Message{ClientMsgId: conv + "-create", ConvId: conv, ConvType: schemas.ConvType_CONV_TYPE_GROUP,
		Sender: founders[0], Kind: schemas.Kind_KIND_MEMBER_JOIN, Recipients: founders}
}

// messageJSON is a message as the tests read it back.
type messageJSON edge.MessageJSON

var toMessageJSON = edge.ToMessageJSON

// UnmarshalJSON reads either form of a message back, the text into Body,
// as a client holds it.
func (m *messageJSON) UnmarshalJSON(data []byte) error {
	type plain messageJSON
	if err := json.Unmarshal(data, (*plain)(m)); err != nil {
		return err
	}
	if m.Text != nil {
		m.Body = []byte(*m.Text)
		if m.ContentType == "" {
			m.ContentType = "text/plain"
		}
	}
	return nil
}
