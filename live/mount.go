package live

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/offlinebox/offlinebox/auth"
	"github.com/offlinebox/offlinebox/edge"
	"github.com/offlinebox/offlinebox/redisstore"
	"github.com/offlinebox/offlinebox/redisstore/readpath"
	"github.com/offlinebox/offlinebox/schemas"
)

// Tokens checks a live connection's bearer tokens: the HTTP API's
// keyring and revocation log, which every request shares. Its errors
// wrap edge.ErrRevoked or edge.ErrRevocationsUnread when those are why.
type Tokens interface {
	// Verify checks a token and, for one pinned to a device, that
	// device's revocations.
	Verify(ctx context.Context, tok string) (auth.Identity, error)
	// DeviceRevoked checks a verified token not pinned to a device
	// against the revocations of the device it is used for.
	DeviceRevoked(ctx context.Context, id auth.Identity, device string) error
}

// Deps are what the live channel takes from the process and the HTTP API
// it is mounted in.
type Deps struct {
	// Router finds each user's store; its main store holds presence, the
	// conversations and the bus. Required.
	Router *redisstore.InboxRouter
	// Reads reads conversations, pages and lists; the API's own reader,
	// so that its caches serve both (one over Router when nil).
	Reads *readpath.Reader
	// Acker applies acks as POST /v1/ack does; NewHandler sets its Acked
	// hook. Required.
	Acker *edge.Acker
	// Tokens checks bearer tokens. Required.
	Tokens Tokens
	// Producer sends typing (QoS 0) records into the pipeline. Required.
	Producer *kgo.Client
	// Open opens a sealed body (the API's one place for it). Required.
	Open func(ctx context.Context, sq *schemas.Sequenced) (*schemas.Sequenced, error)
	// Decode decodes a client frame as strictly as the API decodes a
	// request body. Required.
	Decode func(data []byte, v any, prefix string) *edge.Error
	// Logger (slog.Default when nil); Metrics registers the channel's
	// series (none when nil).
	Logger  *slog.Logger
	Metrics prometheus.Registerer

	// The API's settings the channel follows: a frame's work bound, the
	// Retry-After of a refusal, the topic and limits of typing records,
	// the acks of one frame, the clock of acks and records.
	RequestTimeout time.Duration
	RetryAfter     time.Duration
	MessagesTopic  string
	Limits         schemas.Limits
	MaxCursors     int
	Clock          func() time.Time
	// Leeway is how long after its exp a token still holds (the keyring's).
	Leeway time.Duration
}

func (d Deps) validate() error {
	switch {
	case d.Router == nil:
		return errors.New("live: Deps.Router is required")
	case d.Acker == nil:
		return errors.New("live: Deps.Acker is required")
	case d.Tokens == nil:
		return errors.New("live: Deps.Tokens is required")
	case d.Producer == nil:
		return errors.New("live: Deps.Producer is required")
	case d.Open == nil || d.Decode == nil:
		return errors.New("live: Deps.Open and Deps.Decode are required")
	}
	return nil
}

// Handler serves GET /v1/live on this node: the upgrade, the
// connections' lives and the hub behind them. It is safe for concurrent
// use.
type Handler struct {
	hub    *liveHub
	closed sync.Once
}

// NewHandler returns the live channel over deps; the node's bus is
// subscribed with the first connection.
func NewHandler(cfg Config, deps Deps) (*Handler, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if err := deps.validate(); err != nil {
		return nil, err
	}
	cfg = cfg.WithDefaults()
	if deps.Logger == nil {
		deps.Logger = slog.Default()
	}
	if deps.Clock == nil {
		deps.Clock = time.Now
	}
	m, err := newLiveMetrics(deps.Metrics)
	if err != nil {
		return nil, fmt.Errorf("live: register metrics: %w", err)
	}
	h := newLiveHub(cfg, deps, m)
	if err := h.registerPending(deps.Metrics); err != nil {
		return nil, err
	}
	deps.Acker.Acked = h.acked
	return &Handler{hub: h}, nil
}

// ServeHTTP answers GET /v1/live.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) { h.Serve(w, r) }

// Serve answers GET /v1/live and says what it answered (the status, and
// the bytes of a refusal's body) for the caller's logs and metrics.
func (h *Handler) Serve(w http.ResponseWriter, r *http.Request) (status, size int) {
	return h.hub.serveLive(w, r)
}

// Read hands the read cursors a user's read raised to the receipt events
// of the senders' connections.
func (h *Handler) Read(user string, raised []redisstore.RaisedReceipt) {
	h.hub.readRaised(user, raised)
}

// CloseRevoked closes the connections here that a revocation covers.
func (h *Handler) CloseRevoked(e redisstore.RevocationEntry) { h.hub.closeRevoked(e) }

// Connections counts the connections this node holds, and those of them
// still waiting for their auth frame.
func (h *Handler) Connections() (total, waiting int) { return h.hub.admission.counts() }

// Close ends the live connections (CloseGoingAway: the devices reconnect
// to another node) and stops the channel's loops; Close is idempotent.
func (h *Handler) Close() { h.closed.Do(h.hub.close) }

// writeError answers a refused upgrade as the API answers its errors.
func (h *liveHub) writeError(w http.ResponseWriter, e *edge.Error) (int, int) {
	return edge.WriteError(w, e, h.deps.RetryAfter)
}

// classify maps a frame's or an upgrade's error to its answer.
func (h *liveHub) classify(r *http.Request, err error) *edge.Error {
	return edge.Classify(h.log, r.URL.Path, err)
}

func (h *liveHub) clock() time.Time { return h.deps.Clock() }

// refusalOf is the refusal reason of a token that did not verify.
func refusalOf(err error) string {
	switch {
	case errors.Is(err, edge.ErrRevoked):
		return RefusedRevoked
	case errors.Is(err, edge.ErrRevocationsUnread):
		return RefusedStoreDown
	}
	return RefusedUnauthorized
}
