package api

import (
	"context"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	obclient "github.com/offlinebox/offlinebox/client"
	"github.com/offlinebox/offlinebox/schemas"
	"github.com/offlinebox/offlinebox/workers/push"
)

// liveEnv is the pipeline (fanout, convindex, push) behind two API nodes
// over the same Redis and broker: a device may connect to either, as to
// two API processes behind a load balancer.
type liveEnv struct {
	*env
	nodes []*liveNode
}

type liveNode struct {
	server *Server
	srv    *httptest.Server
}

func (n *liveNode) URL() string { return n.srv.URL }

func newLiveEnv(t *testing.T, cfg Config) *liveEnv { return newLiveEnvWith(t, cfg, nil) }

// newLiveEnvWith registers the first node's metrics on reg.
func newLiveEnvWith(t *testing.T, cfg Config, reg prometheus.Registerer) *liveEnv {
	t.Helper()
	return newLiveEnvOpts(t, envOptions{cfg: cfg, metrics: reg})
}

// newLiveEnvOpts is newLiveEnv with the environment's options (o.cfg is
// the nodes' configuration).
func newLiveEnvOpts(t *testing.T, o envOptions) *liveEnv {
	t.Helper()
	cfg := o.cfg
	cfg.Live.Node = "node-a"
	o.cfg = cfg
	e := newEnv(t, o)
	e.runPipeline()
	p, err := push.New(push.Config{Store: e.storeCfg, Logger: quietLogger(t)}, e.store.Client())
	if err != nil {
		t.Fatal(err)
	}
	e.run(e.runnerConfig("push", schemas.TopicSequenced, schemas.TopicMessages), p)
	rej := e.runnerConfig("push-rejected", schemas.TopicDeadLetter)
	rej.DeadLetterTopic = push.UnusedDeadLetterTopic
	e.run(rej, p)
	le := &liveEnv{env: e, nodes: []*liveNode{{server: e.server, srv: e.srv}}}
	t.Cleanup(e.server.Close)
	cfg.Live.Node = "node-b"
	b, err := New(cfg, Deps{Router: e.router, Keyring: e.keyring, Producer: e.producer, Logger: quietLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(b.Handler())
	t.Cleanup(srv.Close)
	t.Cleanup(b.Close)
	le.nodes = append(le.nodes, &liveNode{server: b, srv: srv})
	return le
}

// device is one device of a user, talking to one node.
type device struct {
	t    *testing.T
	user string
	name string
	http *obclient.Client
	live *obclient.Live
}

func (le *liveEnv) device(node int, user, name string) *device {
	return &device{t: le.t.(*testing.T), user: user, name: name,
		http: obclient.New(le.nodes[node].URL(), le.token(user, name), nil)}
}

// connect opens the live channel and returns the hello and the notice.
func (d *device) connect() (obclient.Frame, obclient.Frame) {
	d.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	l, err := d.http.DialLive(ctx, obclient.LiveOptions{})
	if err != nil {
		d.t.Fatalf("%s/%s connects: %v", d.user, d.name, err)
	}
	d.live = l
	d.t.Cleanup(func() { _ = l.CloseNow() })
	hello := d.next("hello")
	notice := d.next("notice")
	return hello, notice
}

// next waits for the next frame, which must be of type want.
func (d *device) next(want string) obclient.Frame {
	d.t.Helper()
	f := d.nextAny(15 * time.Second)
	if f.Type != want {
		d.t.Fatalf("%s/%s got a %s frame %s, want %s", d.user, d.name, f.Type, f.Raw, want)
	}
	return f
}

func (d *device) nextAny(wait time.Duration) obclient.Frame {
	d.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	f, err := d.live.Next(ctx)
	if err != nil {
		d.t.Fatalf("%s/%s waits for a frame: %v", d.user, d.name, err)
	}
	recordFrame(f)
	return f
}

// quiet reports the frames that came within wait (none expected).
func (d *device) quiet(wait time.Duration, skip ...string) []obclient.Frame {
	d.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	var got []obclient.Frame
	for {
		f, err := d.live.Next(ctx)
		if err != nil {
			return got
		}
		recordFrame(f)
		if !contains(skip, f.Type) {
			got = append(got, f)
		}
	}
}

// until reads frames until one of type want satisfies ok.
func (d *device) until(want string, ok func(obclient.Frame) bool) obclient.Frame {
	d.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		f := d.nextAny(time.Until(deadline))
		if f.Type == want && ok(f) {
			return f
		}
	}
	d.t.Fatalf("%s/%s never got the %s frame wanted", d.user, d.name, want)
	return obclient.Frame{}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// seenFrames collects the frames the tests received, for the check
// against the AsyncAPI document once every test ran (checkSeenFrames).
var seenFrames = map[string][]obclient.Frame{}

func recordFrame(f obclient.Frame) {
	if len(seenFrames[f.Type]) < 20 {
		seenFrames[f.Type] = append(seenFrames[f.Type], f)
	}
}
