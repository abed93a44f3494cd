package live

import (
	"cmp"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"time"

	"github.com/offlinebox/offlinebox/bounds"
)

// Config tunes the live channel (GET /v1/live). Zero values take the
// defaults.
type Config struct {
	// Node names this API process on the live bus and in the presence
	// registry; unique per process (a random id when empty).
	Node string
	// MaxConnections bounds the live connections of this process, from
	// their upgrade on (those still waiting for an auth frame count); one
	// more is refused with 503 live_full.
	MaxConnections int
	// MaxPerUser bounds one user's devices connected to this node (each
	// device needs one connection; more are refused with 429
	// too_many_connections, or close 4010 after an auth frame).
	MaxPerUser int
	// MaxDevices bounds one user's devices connected at once, on every
	// node together (checked in the presence registry as a connection
	// registers; more are closed with 4011).
	MaxDevices int
	// MaxUnauthenticatedPerAddr bounds the connections from one remote
	// address that wait for their auth frame (429
	// too_many_unauthenticated); they count against MaxConnections too.
	MaxUnauthenticatedPerAddr int
	// MaxQueueBytes bounds a connection's unsent frames; a consumer that
	// falls further behind is closed with CloseSlowConsumer.
	MaxQueueBytes int
	// WriteTimeout bounds writing one frame.
	WriteTimeout time.Duration
	// WriteDelay is the most a pushed frame waits for others to share its
	// connection's write (writer.go): 0 is DefaultLiveWriteDelay, a
	// negative delay writes each bus batch's frames at once.
	WriteDelay time.Duration
	// Heartbeat is how often the server pings each connection and extends
	// its presence lease; HeartbeatTimeout closes a connection the client
	// sent nothing on for that long (CloseHeartbeat).
	Heartbeat        time.Duration
	HeartbeatTimeout time.Duration
	// PresenceTTL is the presence lease: a node that stops refreshing
	// (killed) stops being pushed to after it.
	PresenceTTL time.Duration
	// OfflineThreshold: a device back within it that missed at most
	// ReplayMax messages gets them over the socket instead of a notice.
	OfflineThreshold time.Duration
	ReplayMax        int
	// Repush is the wait before each push again of an unacked message
	// (at most len(Repush) times), then the device's next pull takes over.
	Repush []time.Duration
	// BusFormat is how this node publishes on the live bus (kicks,
	// receipts): JSON, which API nodes of the release before read, until
	// every node runs this release; it reads both whatever it is.
	BusFormat Format
	// MaxPending bounds the unacked pushes a connection tracks.
	MaxPending int
	// NoticeConversations bounds the conversations a pull-before notice
	// looks at (the most recently active first).
	NoticeConversations int
	// AckFlush is how long the acks of this node's sockets are held
	// before they are written together (each device's coalesced, every
	// device in one pipelined call per store); a crash loses at most
	// that much of acks, whose messages are then pushed again. At most
	// MaxAckFlush.
	AckFlush time.Duration
	// ReceiptDelay coalesces receipt events: cursor changes within it go
	// out as one event per conversation and sender.
	ReceiptDelay time.Duration
	// AuthTimeout bounds the wait for the auth frame of a connection that
	// brought no token.
	AuthTimeout time.Duration
	// ReadLimit bounds one client frame.
	ReadLimit int64
	// OriginPatterns are the browser origins besides the API's own host
	// allowed to open the live channel (path.Match patterns of hosts).
	OriginPatterns []string
	// Ephemeral (QoS 0: typing) frames pass a token bucket per connection
	// (EphemeralConnRate a second, EphemeralConnBurst at once) and one
	// per user on this node (EphemeralUserRate, EphemeralUserBurst), of
	// which at most EphemeralUsers are kept; excess is dropped. A
	// connection with more than EphemeralMaxDrops dropped within
	// EphemeralDropWindow is closed with CloseEphemeralFlood.
	EphemeralConnRate   float64
	EphemeralConnBurst  int
	EphemeralUserRate   float64
	EphemeralUserBurst  int
	EphemeralUsers      int
	EphemeralMaxDrops   int
	EphemeralDropWindow time.Duration
}

// Defaults of Config.
const (
	DefaultLiveMaxConnections   = 20_000
	DefaultLiveMaxPerUser       = 10
	DefaultLiveMaxDevices       = 32
	DefaultLiveMaxUnauthPerAddr = 32
	DefaultLiveMaxQueueBytes    = 256 << 10
	DefaultLiveWriteTimeout     = 10 * time.Second
	DefaultLiveWriteDelay       = time.Millisecond
	DefaultLiveHeartbeat        = 20 * time.Second
	DefaultLiveOfflineThreshold = 30 * time.Second
	DefaultLiveReplayMax        = 20
	DefaultLiveMaxPending       = 512
	DefaultLiveNoticeConvs      = 1000
	DefaultLiveReceiptDelay     = 200 * time.Millisecond
	DefaultLiveAckFlush         = 100 * time.Millisecond
	DefaultLiveAuthTimeout      = 5 * time.Second
	DefaultLiveReadLimit        = 64 << 10
	// The ephemeral budget: 2 a second (5 at once) per connection, 4 a
	// second (8 at once) per user; 50 dropped within 10 s close it.
	DefaultLiveEphemeralConnRate   = 2.0
	DefaultLiveEphemeralConnBurst  = 5
	DefaultLiveEphemeralUserRate   = 4.0
	DefaultLiveEphemeralUserBurst  = 8
	DefaultLiveEphemeralUsers      = 100_000
	DefaultLiveEphemeralMaxDrops   = 50
	DefaultLiveEphemeralDropWindow = 10 * time.Second
)

// MaxAckFlush bounds Config.AckFlush: the acks a crash may lose.
const MaxAckFlush = time.Second

// DefaultRepush is 30 s, 1, 2, 4 and 8 minutes: five pushes again at most.
var DefaultRepush = []time.Duration{30 * time.Second, time.Minute, 2 * time.Minute, 4 * time.Minute, 8 * time.Minute}

func (c Config) WithDefaults() Config {
	if c.Node == "" {
		var b [6]byte
		_, _ = rand.Read(b[:])
		c.Node = "n" + hex.EncodeToString(b[:])
	}
	c.MaxConnections = cmp.Or(c.MaxConnections, DefaultLiveMaxConnections)
	c.MaxPerUser = cmp.Or(c.MaxPerUser, DefaultLiveMaxPerUser)
	c.MaxDevices = cmp.Or(c.MaxDevices, DefaultLiveMaxDevices)
	c.MaxUnauthenticatedPerAddr = cmp.Or(c.MaxUnauthenticatedPerAddr, DefaultLiveMaxUnauthPerAddr)
	c.MaxQueueBytes = cmp.Or(c.MaxQueueBytes, DefaultLiveMaxQueueBytes)
	c.WriteDelay = cmp.Or(c.WriteDelay, DefaultLiveWriteDelay)
	c.WriteTimeout = cmp.Or(c.WriteTimeout, DefaultLiveWriteTimeout)
	c.Heartbeat = cmp.Or(c.Heartbeat, DefaultLiveHeartbeat)
	c.HeartbeatTimeout = cmp.Or(c.HeartbeatTimeout, 3*c.Heartbeat)
	c.PresenceTTL = cmp.Or(c.PresenceTTL, 3*c.Heartbeat)
	c.OfflineThreshold = cmp.Or(c.OfflineThreshold, DefaultLiveOfflineThreshold)
	c.ReplayMax = cmp.Or(c.ReplayMax, DefaultLiveReplayMax)
	if c.Repush == nil {
		c.Repush = DefaultRepush
	}
	c.MaxPending = cmp.Or(c.MaxPending, DefaultLiveMaxPending)
	c.NoticeConversations = cmp.Or(c.NoticeConversations, DefaultLiveNoticeConvs)
	c.ReceiptDelay = cmp.Or(c.ReceiptDelay, DefaultLiveReceiptDelay)
	c.AckFlush = cmp.Or(c.AckFlush, DefaultLiveAckFlush)
	c.AuthTimeout = cmp.Or(c.AuthTimeout, DefaultLiveAuthTimeout)
	c.ReadLimit = cmp.Or(c.ReadLimit, DefaultLiveReadLimit)
	c.EphemeralConnRate = cmp.Or(c.EphemeralConnRate, DefaultLiveEphemeralConnRate)
	c.EphemeralConnBurst = cmp.Or(c.EphemeralConnBurst, DefaultLiveEphemeralConnBurst)
	c.EphemeralUserRate = cmp.Or(c.EphemeralUserRate, DefaultLiveEphemeralUserRate)
	c.EphemeralUserBurst = cmp.Or(c.EphemeralUserBurst, DefaultLiveEphemeralUserBurst)
	c.EphemeralUsers = cmp.Or(c.EphemeralUsers, DefaultLiveEphemeralUsers)
	c.EphemeralMaxDrops = cmp.Or(c.EphemeralMaxDrops, DefaultLiveEphemeralMaxDrops)
	c.EphemeralDropWindow = cmp.Or(c.EphemeralDropWindow, DefaultLiveEphemeralDropWindow)
	return c
}

// Validate reports the first field that is out of range.
func (c Config) Validate() error {
	c = c.WithDefaults()
	if err := bounds.First("api",
		bounds.Min("Live.MaxConnections", c.MaxConnections, 1),
		bounds.Min("Live.MaxPerUser", c.MaxPerUser, 1),
		bounds.Min("Live.MaxDevices", c.MaxDevices, 1),
		bounds.Min("Live.MaxUnauthenticatedPerAddr", c.MaxUnauthenticatedPerAddr, 1),
		bounds.Min("Live.MaxQueueBytes", c.MaxQueueBytes, 4096),
		bounds.If(c.WriteDelay > maxLiveWriteDelay, "Live.WriteDelay %s is above %s (it adds to every push's latency)", c.WriteDelay, maxLiveWriteDelay),
		bounds.Min("Live.Heartbeat", c.Heartbeat, 10*time.Millisecond),
		bounds.If(c.HeartbeatTimeout <= c.Heartbeat, "Live.HeartbeatTimeout %s is not above Heartbeat %s", c.HeartbeatTimeout, c.Heartbeat),
		bounds.If(c.PresenceTTL <= c.Heartbeat, "Live.PresenceTTL %s is not above Heartbeat %s", c.PresenceTTL, c.Heartbeat),
		bounds.NotNegative("Live.ReplayMax", c.ReplayMax),
		bounds.Positive("Live.AckFlush", c.AckFlush),
		bounds.If(c.AckFlush > MaxAckFlush, "Live.AckFlush %s is above %s (the acks a crash may lose)", c.AckFlush, MaxAckFlush),
		bounds.Min("Live.MaxPending", c.MaxPending, 1),
		bounds.Min("Live.ReadLimit", c.ReadLimit, 1024),
		bounds.If(c.EphemeralConnRate <= 0 || c.EphemeralUserRate <= 0, "Live.EphemeralConnRate %g and EphemeralUserRate %g must be positive", c.EphemeralConnRate, c.EphemeralUserRate),
		bounds.If(c.EphemeralConnBurst < 1 || c.EphemeralUserBurst < 1, "Live.EphemeralConnBurst %d and EphemeralUserBurst %d must be at least 1", c.EphemeralConnBurst, c.EphemeralUserBurst),
		bounds.Min("Live.EphemeralUsers", c.EphemeralUsers, 1),
		bounds.Min("Live.EphemeralMaxDrops", c.EphemeralMaxDrops, 1),
		bounds.Positive("Live.EphemeralDropWindow", c.EphemeralDropWindow),
	); err != nil {
		return err
	}
	if err := c.BusFormat.Validate(); err != nil {
		return fmt.Errorf("api: Live.BusFormat: %w", err)
	}
	for i, d := range c.Repush {
		if d <= 0 {
			return fmt.Errorf("api: Live.Repush[%d] %s is not positive", i, d)
		}
	}
	return nil
}
