package api

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/offlinebox/offlinebox/auth"
	"github.com/offlinebox/offlinebox/edge"
	"github.com/offlinebox/offlinebox/live"
	"github.com/offlinebox/offlinebox/redisstore"
	"github.com/offlinebox/offlinebox/redisstore/readpath"
)

// Deps are the parts the server talks to.
type Deps struct {
	// Router finds the store holding each user's keys; its main store holds
	// the conversations. Required.
	Router *redisstore.InboxRouter
	// Keyring verifies bearer tokens. Required.
	Keyring *auth.Keyring
	// Producer sends sent messages and read receipts (a stream.NewProducer
	// client). Required.
	Producer *kgo.Client
	// History serves pages older than the Redis window; nil answers 501.
	History HistoryReader
	// Opener opens sealed bodies and previews; nil: bodies are stored in
	// the clear (a sealed one is an error).
	Opener BodyOpener
	// Logger (slog.Default when nil).
	Logger *slog.Logger
	// Metrics registers the server's metrics (none when nil).
	Metrics prometheus.Registerer
	// Ready is the process's readiness beside the API's Redis (GET
	// /readyz); nil: Redis alone.
	Ready ReadyFunc
}

// Server is the HTTP API. It is safe for concurrent use.
type Server struct {
	cfg      Config
	router   *redisstore.InboxRouter
	reads    *readpath.Reader // sync, pages and the list, over router
	keyring  *auth.Keyring
	producer *kgo.Client
	history  HistoryReader
	opener   BodyOpener
	ready    ReadyFunc
	log      *slog.Logger
	metrics  *metrics
	slots    chan struct{}
	admitted *admission
	encoded  *sharedEncodings
	frames   *sharedFrames
	handler  http.Handler
	live     *live.Handler
	acker    *edge.Acker
	revoked  *revocations
	coders   *coders
	closed   sync.Once
}

// New returns a Server over deps.
func New(cfg Config, deps Deps) (*Server, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	switch {
	case deps.Router == nil:
		return nil, errors.New("api: Deps.Router is required")
	case deps.Keyring == nil:
		return nil, errors.New("api: Deps.Keyring is required")
	case deps.Producer == nil:
		return nil, errors.New("api: Deps.Producer is required")
	}
	cfg = cfg.withDefaults()
	m, err := newMetrics(deps.Metrics)
	if err != nil {
		return nil, fmt.Errorf("api: register metrics: %w", err)
	}
	cs, err := newCoders(0)
	if err != nil {
		return nil, fmt.Errorf("api: %w", err)
	}
	s := &Server{
		coders: cs, cfg: cfg, router: deps.Router, reads: readpath.New(deps.Router), keyring: deps.Keyring, producer: deps.Producer,
		history: deps.History, opener: deps.Opener, ready: deps.Ready, log: deps.Logger, metrics: m, slots: make(chan struct{}, cfg.MaxInFlight),
		admitted: newAdmission(cfg.MaxPerUser, cfg.MaxAdmitted), encoded: newSharedEncodings(),
		frames: newSharedFrames(),
	}
	if s.log == nil {
		s.log = slog.Default()
	}
	s.acker = &edge.Acker{Router: deps.Router, Clock: cfg.Clock}
	s.revoked = newRevocations(deps.Router.Main(), s.log)
	if s.live, err = s.newLive(deps); err != nil {
		return nil, err
	}
	s.revoked.onRevoked = s.live.CloseRevoked
	s.revoked.run()
	mux := http.NewServeMux()
	for _, rt := range s.routes() {
		mux.Handle(rt.method+" "+rt.pattern, s.wrap(rt))
	}
	s.handler = s.unrouted(mux)
	return s, nil
}

// newLive is the live channel this server mounts at /v1/live: it checks
// tokens, decodes frames, opens bodies and applies acks as the server
// does, so that a device is answered the same on either.
func (s *Server) newLive(deps Deps) (*live.Handler, error) {
	return live.NewHandler(s.cfg.Live, live.Deps{
		Router: deps.Router, Reads: s.reads, Acker: s.acker, Tokens: liveTokens{s}, Producer: deps.Producer,
		Open: s.openMessage, Decode: decodeJSON, Logger: s.log, Metrics: deps.Metrics,
		RequestTimeout: s.cfg.RequestTimeout, RetryAfter: s.cfg.RetryAfter, MessagesTopic: s.cfg.MessagesTopic,
		Limits: s.cfg.Limits, MaxCursors: s.cfg.MaxCursors, Clock: s.cfg.Clock, Leeway: deps.Keyring.Leeway(),
	})
}

// liveTokens checks the live channel's tokens as every request's are.
type liveTokens struct{ s *Server }

func (t liveTokens) Verify(ctx context.Context, tok string) (auth.Identity, error) {
	return t.s.verifyToken(ctx, tok)
}

func (t liveTokens) DeviceRevoked(ctx context.Context, id auth.Identity, device string) error {
	return t.s.deviceRevoked(ctx, id, device)
}

// unrouted answers what no route takes in the API's JSON error format, as
// every other error: 405 with Allow when the path is served under other
// methods, else 404. The mux's own answers to these are plain text.
func (s *Server) unrouted(mux *http.ServeMux) http.Handler {
	var methods []string
	for _, rt := range s.routes() {
		if !slices.Contains(methods, rt.method) {
			methods = append(methods, rt.method)
		}
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, pattern := mux.Handler(r); pattern != "" {
			mux.ServeHTTP(w, r)
			return
		}
		var allowed []string
		for _, m := range methods {
			probe := r.Clone(r.Context())
			probe.Method = m
			if _, pattern := mux.Handler(probe); pattern != "" {
				allowed = append(allowed, m)
			}
		}
		if slices.Contains(allowed, http.MethodGet) {
			allowed = append(allowed, http.MethodHead) // the mux serves HEAD with GET
		}
		e := &apiError{Status: http.StatusNotFound, Code: "not_found", Msg: fmt.Sprintf("no such path %q", r.URL.Path)}
		if len(allowed) > 0 {
			w.Header().Set("Allow", strings.Join(allowed, ", "))
			e = &apiError{Status: http.StatusMethodNotAllowed, Code: "method_not_allowed",
				Msg: fmt.Sprintf("%s is not allowed here; use %s", r.Method, strings.Join(allowed, " or "))}
		}
		status, _ := s.writeError(w, e)
		s.metrics.requests.WithLabelValues("unrouted", strconv.Itoa(status)).Inc()
	})
}

// Handler serves the API.
func (s *Server) Handler() http.Handler { return s.handler }

// Close ends the live connections (CloseGoingAway: the devices reconnect
// to another node) and stops the live channel's loops. The HTTP server
// serving Handler is the caller's to shut down. It also stops reading the
// revocation log; Close is idempotent.
func (s *Server) Close() {
	s.closed.Do(func() {
		s.live.Close()
		s.revoked.close()
	})
}

// handlerFunc answers one request: a status and a JSON body, or an error
// (an *apiError is answered as is; any other is a 500 or a 503).
type handlerFunc func(r *http.Request, id auth.Identity) (int, any, error)

// route is one entry of the API; openapi.yaml documents the same list.
type route struct {
	method  string
	pattern string
	public  bool // no bearer token needed
	h       handlerFunc
	// raw serves the request itself (the WebSocket upgrade): no in-flight
	// slot, body limit or timeout; it authenticates on its own.
	raw func(w http.ResponseWriter, r *http.Request) (int, int)
}

func (s *Server) routes() []route {
	return []route{
		{method: "GET", pattern: "/healthz", public: true, h: s.healthz},
		{method: "GET", pattern: "/readyz", public: true, h: s.readyz},
		{method: "GET", pattern: "/v1/conversations", h: s.listConversations},
		{method: "GET", pattern: "/v1/conversations/{conv}/messages", h: s.pageMessages},
		{method: "GET", pattern: "/v1/conversations/{conv}/history", h: s.pageHistory},
		{method: "POST", pattern: "/v1/sync", h: s.sync},
		{method: "POST", pattern: "/v1/ack", h: s.ack},
		{method: "POST", pattern: "/v1/read", h: s.read},
		{method: "POST", pattern: "/v1/messages", h: s.sendMessage},
		{method: "GET", pattern: "/v1/conversations/{conv}/receipts", h: s.receipts},
		{method: "GET", pattern: "/v1/conversations/{conv}/members", h: s.members},
		{method: "GET", pattern: "/v1/rejections", h: s.rejections},
		{method: "POST", pattern: "/v1/devices/revoke", h: s.revokeDevices},
		{method: "GET", pattern: "/v1/live", raw: s.live.Serve},
	}
}

// wrap adds to a route what every request gets: authentication, the
// per-user and in-flight bounds, the body limits, the request timeout,
// error answers, logs and metrics.
func (s *Server) wrap(rt route) http.Handler {
	name := rt.method + " " + rt.pattern
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		var status, size int
		if rt.raw != nil {
			status, size = rt.raw(w, r)
		} else {
			status, size = s.serve(w, r, rt)
		}
		s.metrics.observe(name, status, size, time.Since(start))
		lvl := slog.LevelDebug
		if status >= 500 {
			lvl = slog.LevelWarn
		}
		// The path names conversations, never bodies or tokens.
		s.log.Log(r.Context(), lvl, "api request", "route", name, "path", r.URL.Path,
			"status", status, "bytes", size, "duration", time.Since(start))
	})
}

// serve admits a request in this order, so that nothing a client is slow
// to send holds what other clients need: the token (cheap, no I/O: a
// revocation only the store can tell is read once a slot is held), a
// place among the user's admitted requests (429 when the user holds all
// of theirs), the body, read whole under BodyTimeout, and only then a slot
// among the requests worked on, waited for in arrival order for at most
// QueueWait (then 503 with Retry-After).
func (s *Server) serve(w http.ResponseWriter, r *http.Request, rt route) (int, int) {
	var id auth.Identity
	var revocationCheck func(context.Context) error
	if !rt.public {
		tok, err := auth.FromRequest(r)
		if err == nil {
			id, revocationCheck, err = s.verifyTokenUnread(tok)
		}
		if err != nil {
			return s.refuseUnread(w, r, s.refuseToken(w, err))
		}
		release, aerr := s.admitted.acquire(id.User)
		if aerr != nil {
			return s.refuseUnread(w, r, aerr)
		}
		defer release()
	}
	if rt.method == http.MethodPost {
		if aerr := s.readRequestBody(w, r); aerr != nil {
			return s.writeError(w, aerr)
		}
	}
	if aerr := s.takeSlot(r); aerr != nil {
		return s.writeError(w, aerr)
	}
	defer func() { <-s.slots }()
	ctx, cancel := context.WithTimeout(r.Context(), s.cfg.RequestTimeout)
	defer cancel()
	if revocationCheck != nil {
		if err := revocationCheck(ctx); err != nil {
			return s.writeError(w, s.refuseToken(w, err))
		}
	}
	status, body, err := rt.h(r.WithContext(ctx), id)
	if err != nil {
		return s.writeError(w, s.classify(r, err))
	}
	return s.writeAnswer(w, r, status, body)
}

// refuseToken is the answer to a token that did not verify, with the
// challenge header of a 401.
func (s *Server) refuseToken(w http.ResponseWriter, err error) *apiError {
	e := tokenRefusal(err)
	if e.Status == http.StatusUnauthorized {
		w.Header().Set("WWW-Authenticate", `Bearer realm="offlinebox"`)
	}
	return e
}

// takeSlot waits for a slot among the requests worked on. A burst (every
// client reconnecting after an outage) is paced through the slots in
// arrival order rather than refused, so it costs each client its wait and
// no failed round trips; the wait is bounded by QueueWait, and the queue
// by MaxAdmitted (admission refuses before it grows further).
func (s *Server) takeSlot(r *http.Request) *apiError {
	select {
	case s.slots <- struct{}{}:
		return nil
	default:
	}
	start := time.Now()
	wait := time.NewTimer(s.cfg.QueueWait)
	defer wait.Stop()
	select {
	case s.slots <- struct{}{}:
		s.metrics.queueWait.Observe(time.Since(start).Seconds())
		return nil
	case <-wait.C:
		s.metrics.queueWait.Observe(time.Since(start).Seconds())
		return errOverloaded
	case <-r.Context().Done():
		return errOverloaded
	}
}

// refuseUnread answers a request refused before its body was read. The
// connection is closed after the answer: net/http would otherwise read
// what is left of the body first, as slowly as the client sends it.
func (s *Server) refuseUnread(w http.ResponseWriter, r *http.Request, e *apiError) (int, int) {
	if r.ContentLength != 0 {
		w.Header().Set("Connection", "close")
	}
	return s.writeError(w, e)
}

// readRequestBody reads the whole body, at most MaxBodyBytes, under
// BodyTimeout, and leaves it in memory as r.Body for the handler.
func (s *Server) readRequestBody(w http.ResponseWriter, r *http.Request) *apiError {
	rc := http.NewResponseController(w)
	// Not every ResponseWriter has a connection (tests' recorders): the
	// server's own ReadTimeout is then the bound.
	timed := rc.SetReadDeadline(time.Now().Add(s.cfg.BodyTimeout)) == nil
	data, err := io.ReadAll(http.MaxBytesReader(w, r.Body, s.cfg.MaxBodyBytes))
	if timed {
		_ = rc.SetReadDeadline(time.Time{})
	}
	var tooBig *http.MaxBytesError
	var netErr net.Error
	switch {
	case errors.As(err, &tooBig):
		return badRequest("body", "is larger than %d bytes", tooBig.Limit)
	case errors.As(err, &netErr) && netErr.Timeout():
		w.Header().Set("Connection", "close")
		return &apiError{Status: http.StatusRequestTimeout, Code: "body_timeout", Field: "body",
			Msg: fmt.Sprintf("was not received within %s", s.cfg.BodyTimeout)}
	case err != nil:
		return badRequest("body", "could not be read: %v", err)
	}
	r.Body = io.NopCloser(bytes.NewReader(data))
	return nil
}

// admission counts the requests admitted per user and in all. Its table
// holds only users with a request admitted, so it is bounded by
// MaxAdmitted.
type admission struct {
	mu       sync.Mutex
	users    map[string]int
	total    int
	perUser  int
	maxTotal int
}

func newAdmission(perUser, maxTotal int) *admission {
	return &admission{users: map[string]int{}, perUser: perUser, maxTotal: maxTotal}
}

// acquire admits one request of user, or answers why not.
func (a *admission) acquire(user string) (release func(), err *apiError) {
	a.mu.Lock()
	defer a.mu.Unlock()
	switch {
	case a.users[user] >= a.perUser:
		return nil, errUserBusy
	case a.total >= a.maxTotal:
		return nil, errOverloaded
	}
	a.users[user]++
	a.total++
	return sync.OnceFunc(func() {
		a.mu.Lock()
		defer a.mu.Unlock()
		a.total--
		if a.users[user]--; a.users[user] == 0 {
			delete(a.users, user)
		}
	}), nil
}

// classify maps a handler error to its answer (edge.Classify).
func (s *Server) classify(r *http.Request, err error) *apiError {
	return edge.Classify(s.log, r.URL.Path, err)
}

// writeError answers e (edge.WriteError).
func (s *Server) writeError(w http.ResponseWriter, e *apiError) (int, int) {
	return edge.WriteError(w, e, s.cfg.RetryAfter)
}

// encodeJSON is body as JSON (as it is when a []byte); an answer that
// cannot be encoded becomes a 500.
func encodeJSON(status int, body any) ([]byte, int) {
	data, ok := body.([]byte)
	if !ok {
		var err error
		if data, err = json.Marshal(body); err != nil {
			return []byte(`{"error":{"code":"internal","message":"could not encode the answer"}}`), http.StatusInternalServerError
		}
	}
	return data, status
}

// writeRaw writes an encoded JSON answer; its Content-Encoding, if any, is
// set already.
func writeRaw(w http.ResponseWriter, status int, data []byte) (int, int) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	n, _ := w.Write(data)
	return status, n
}
