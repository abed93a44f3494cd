package api

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/offlinebox/offlinebox/live"
	"github.com/offlinebox/offlinebox/redisstore"
	"github.com/offlinebox/offlinebox/schemas"
)

// liveHub holds this node's live connections: it reads the node's channel
// and the channels of the conversations its connections listen to (one
// subscription per conversation, whatever the connections here), hands
// pushes to connections, pushes again what was not acked, keeps presence
// leases alive and closes dead peers.
type liveHub struct {
	s       *Server
	cfg     LiveConfig
	store   *redisstore.Store // the main store: presence, conversations
	bus     *live.Bus
	metrics *liveMetrics
	log     *slog.Logger
	typing  *userBudgets // the users' ephemeral buckets

	startOnce sync.Once
	startErr  error
	sub       *live.Subscription
	ctx       context.Context
	cancel    context.CancelFunc
	done      chan struct{}

	mu      sync.Mutex
	conns   map[string]*liveConn // conn id → conn
	devices map[devKey]*liveConn
	groups  map[string]map[*liveConn]bool // conversation → connections here listening to it
	byUser  map[string]map[*liveConn]bool // user → their connections here

	// admission holds the node's bounds on connections (its own lock).
	admission *liveAdmission
	// deadlines are the connections' token ends (their own lock).
	deadlines tokenDeadlines
	// running counts the connections' goroutines, which close waits for.
	running sync.WaitGroup

	// pendMu guards withPend, the connections with pushes not acked. It
	// is taken inside a connection's mu (liveConn.listPendingLocked) and
	// no other lock is taken while it is held.
	pendMu   sync.Mutex
	withPend map[*liveConn]bool

	// writesMu guards the writes deferred while the hub hands out what
	// the bus brought (deferWrites).
	writesMu  sync.Mutex
	deferring bool
	deferred  []*liveConn

	receipts *receiptCoalescer
	raises   *raiseBatcher
	pushes   *pushedBatcher
	acks     *ackBatcher

	// catchUps wait for a worker (live_catchup.go); dispatchRuns are
	// finished ones, run by the dispatcher in turn with the channels'
	// records.
	catchUps     chan catchUpJob
	dispatchRuns chan func()
	// resubscribedFull are catch-ups after a resubscription that found
	// the workers' queue full, for the dispatcher to turn into notices
	// (at most one per connection and conversation listened to: each is
	// marked catching up meanwhile); resubscribedSignal wakes it.
	resubMu            sync.Mutex
	resubscribedFull   []catchUpJob
	resubscribedSignal chan struct{}
	// pullMu guards toPull, the conversations per connection whose
	// catch-up after a resubscription found the queue full, and pulling:
	// a pass runs that names them to each device in one notice
	// (pullSoon).
	pullMu  sync.Mutex
	toPull  map[*liveConn]map[string]bool
	pulling bool
	// relistMu guards the passes that read the connections' conversations
	// again after the node's own channel was resubscribed (relistSoon).
	relistMu    sync.Mutex
	relisting   bool
	relistAgain bool
	// beforeSubscribe, when set (tests), runs before a catch-up
	// subscribes a conversation's channel.
	beforeSubscribe func(conv string)
}

type devKey struct{ user, device string }

func newLiveHub(s *Server, m *liveMetrics) *liveHub {
	st := s.router.Main()
	h := &liveHub{s: s, cfg: s.cfg.Live, store: st, bus: live.NewBus(st.Client(), st.Config().CallTimeout),
		metrics: m, log: s.log.With("node", s.cfg.Live.Node),
		conns: map[string]*liveConn{}, devices: map[devKey]*liveConn{}, groups: map[string]map[*liveConn]bool{},
		byUser:   map[string]map[*liveConn]bool{},
		withPend: map[*liveConn]bool{}, admission: newLiveAdmission(s.cfg.Live),
		catchUps: make(chan catchUpJob, catchUpQueue), dispatchRuns: make(chan func(), dispatchQueue),
		resubscribedSignal: make(chan struct{}, 1)}
	h.typing = newUserBudgets(h.cfg)
	h.receipts = newReceiptCoalescer(h)
	h.raises = &raiseBatcher{h: h}
	h.pushes = newPushedBatcher(h)
	h.acks = &ackBatcher{store: st}
	return h
}

// start subscribes the node's channel and starts the loops, once.
func (h *liveHub) start() error {
	h.startOnce.Do(func() {
		h.ctx, h.cancel = context.WithCancel(context.Background())
		h.done = make(chan struct{})
		h.sub = h.bus.Subscribe(h.ctx, 4096)
		h.sub.OnResubscribed(h.noteResubscribed)
		if err := h.sub.Add(h.ctx, h.store.Keys().NodeChannel(h.cfg.Node)); err != nil {
			h.startErr = err
			h.sub.Close()
			close(h.done)
			return
		}
		go h.run()
		for range catchUpWorkers {
			go h.catchUpLoop()
		}
	})
	return h.startErr
}

// close shuts every connection with CloseGoingAway and stops the loops.
func (h *liveHub) close() {
	if h.cancel == nil {
		return
	}
	for _, c := range h.connections() {
		c.close(CloseGoingAway, "server shutting down; reconnect")
	}
	h.cancel()
	h.sub.Close()
	<-h.done
	h.raises.flushNow()
	h.pushes.flushNow()
	// The connections unregister (presence, channels) on their own
	// goroutines; those are waited for, a while.
	ended := make(chan struct{})
	go func() { h.running.Wait(); close(ended) }()
	select {
	case <-ended:
	case <-time.After(closeWait):
		h.log.Warn("live connections still ending at shutdown")
	}
}

// closeWait bounds the wait of close for the connections to end.
const closeWait = 5 * time.Second

func (h *liveHub) run() {
	defer close(h.done)
	tick := h.cfg.Heartbeat
	if len(h.cfg.Repush) > 0 {
		tick = min(tick, max(h.cfg.Repush[0]/4, 5*time.Millisecond))
	}
	tick = min(tick, h.cfg.ReceiptDelay)
	t := time.NewTicker(tick)
	defer t.Stop()
	lastBeat := time.Now()
	wd := newWriteDelay(h)
	defer wd.stop()
	for {
		select {
		case <-h.ctx.Done():
			return
		case data, ok := <-h.sub.Messages():
			if !ok {
				return
			}
			h.deferWrites()
			h.dispatch(data)
			h.dispatchWaiting()
			wd.dispatched()
		case f := <-h.dispatchRuns:
			h.deferWrites()
			f()
			wd.dispatched()
		case <-wd.C():
			wd.expired()
		case <-h.resubscribedSignal:
			h.noticeResubscribedFull()
		case now := <-t.C:
			h.repushDue(now)
			h.expireTokens(now)
			h.raises.flushDue(h.ctx)
			h.pushes.flushDue(h.ctx)
			h.receipts.flushDue(h.ctx, now)
			if now.Sub(lastBeat) >= h.cfg.Heartbeat {
				lastBeat = now
				h.heartbeat(now)
			}
		}
	}
}

// maxDrain bounds the bus batches handed out before the frames they
// queued are written.
const maxDrain = 64

// dispatchWaiting hands out the bus batches that are already here (up to
// maxDrain), without waiting for any.
func (h *liveHub) dispatchWaiting() {
	for range maxDrain {
		select {
		case data, ok := <-h.sub.Messages():
			if !ok {
				return
			}
			h.dispatch(data)
		default:
			return
		}
	}
}

// deferWrites makes the connections that are queued frames from now on
// wait for writeDeferred to write them: what the bus brought at once
// (or a catch-up releases) goes to a connection in one write syscall,
// not one per frame, at no cost in latency (the frames are all here).
// Frames queued meanwhile by other goroutines wait as well, for as long
// as the hub takes to hand out what it holds.
func (h *liveHub) deferWrites() {
	h.writesMu.Lock()
	h.deferring = true
	h.writesMu.Unlock()
}

// deferWrite takes c's write for writeDeferred; false when writes are not
// deferred (c writes now).
func (h *liveHub) deferWrite(c *liveConn) bool {
	h.writesMu.Lock()
	defer h.writesMu.Unlock()
	if !h.deferring {
		return false
	}
	h.deferred = append(h.deferred, c)
	return true
}

// writeDeferred ends the deferral and writes what the connections were
// queued meanwhile.
// Only the hub's loop defers writes, so nothing is added to the list
// while it writes them.
func (h *liveHub) writeDeferred() {
	h.writesMu.Lock()
	conns := h.deferred
	h.deferring = false
	h.writesMu.Unlock()
	for i, c := range conns {
		c.writeNow()
		conns[i] = nil
	}
	h.writesMu.Lock()
	h.deferred = conns[:0]
	if cap(conns) > maxKeptDeferred {
		h.deferred = nil
	}
	h.writesMu.Unlock()
}

// maxKeptDeferred bounds the list of deferred writes the hub keeps for the
// next drain (one the length of its connections is reused; a longer one,
// after a burst, is let go).
const maxKeptDeferred = 1 << 14

// register adds a connection, replacing an older one of the same device
// here or on another node.
func (h *liveHub) register(ctx context.Context, c *liveConn) (redisstore.Presence, bool, error) {
	h.mu.Lock()
	old := h.devices[devKey{c.user, c.device}]
	h.conns[c.id] = c
	h.devices[devKey{c.user, c.device}] = c
	if h.byUser[c.user] == nil {
		h.byUser[c.user] = map[*liveConn]bool{}
	}
	h.byUser[c.user][c] = true
	h.mu.Unlock()
	h.metrics.connections.Inc()
	if old != nil {
		h.closeReplaced(old)
	}
	prev, had, err := h.store.SetPresence(ctx, c.user, c.device, redisstore.PresenceLease{
		Node: h.cfg.Node, Conn: c.id, TTL: h.cfg.PresenceTTL, Keep: h.cfg.OfflineThreshold, MaxDevices: h.cfg.MaxDevices}, time.Now())
	if err != nil {
		return prev, had, err
	}
	c.leased.Store(true)
	if had && prev.Online(time.Now()) && prev.Node != h.cfg.Node {
		h.kick(ctx, prev.Node, live.Target{User: c.user, Device: c.device, Conn: prev.Conn})
	}
	return prev, had, nil
}

func (h *liveHub) kick(ctx context.Context, node string, t live.Target) {
	data, err := live.Encode(live.Batch{Envelopes: []live.Envelope{{Kind: live.KindKick, Targets: []live.Target{t}}}})
	if err == nil {
		_, err = h.bus.Publish(ctx, h.store.Keys().NodeChannel(node), data)
	}
	if err != nil {
		h.log.Warn("could not close the replaced connection on its node", "peer", node, "err", err)
	}
}

// closeReplaced closes c: a newer connection of its device opened, here
// or on another node.
func (h *liveHub) closeReplaced(c *liveConn) {
	if c.close(CloseReplaced, "replaced by a newer connection of this device") {
		h.metrics.replaced.Inc() // once, however many ways the word came
	}
}

// connections are the node's connections now.
func (h *liveHub) connections() []*liveConn {
	h.mu.Lock()
	defer h.mu.Unlock()
	conns := make([]*liveConn, 0, len(h.conns))
	for _, c := range h.conns {
		conns = append(conns, c)
	}
	return conns
}

// unregister removes a closed connection and marks its presence closed.
func (h *liveHub) unregister(c *liveConn) {
	h.mu.Lock()
	delete(h.conns, c.id)
	if set := h.byUser[c.user]; set != nil {
		if delete(set, c); len(set) == 0 {
			delete(h.byUser, c.user)
		}
	}
	if h.devices[devKey{c.user, c.device}] == c {
		delete(h.devices, devKey{c.user, c.device})
	}
	var drop []string
	c.mu.Lock()
	for g := range c.groups {
		if set := h.groups[g]; set != nil {
			delete(set, c)
			if len(set) == 0 {
				delete(h.groups, g)
				drop = append(drop, g)
			}
		}
	}
	if c.listed {
		c.listed = false
		h.pendMu.Lock()
		delete(h.withPend, c)
		h.pendMu.Unlock()
	}
	c.mu.Unlock()
	h.mu.Unlock()
	h.metrics.connections.Dec()
	ctx, cancel := context.WithTimeout(context.Background(), h.store.Config().CallTimeout)
	defer cancel()
	if len(drop) > 0 {
		if err := h.dropChannels(ctx, drop...); err != nil {
			h.log.Warn("unsubscribe conversations", "err", err)
		}
	}
	if err := h.store.ClearPresence(ctx, c.user, c.device, c.id, time.Now()); err != nil {
		h.log.Warn("clear presence", "err", err)
	}
}

// addListenerLocked makes c listen to conv, the channel's records up to
// floor not being c's and the others waiting in cu until its catch-up is
// done; false when c listens to as many conversations as it may (what
// else comes reaches it by pull). h.mu and c.mu are held.
func (h *liveHub) addListenerLocked(c *liveConn, conv string, floor uint64, cu *catchUp) bool {
	if len(c.groups) >= h.cfg.NoticeConversations {
		h.metrics.fallbacks.WithLabelValues("listen_full").Inc()
		return false
	}
	c.groups[conv] = floor
	if c.catching == nil { // most connections never catch up: no map until one does
		c.catching = map[string]*catchUp{}
	}
	c.catching[conv] = cu
	set := h.groups[conv]
	if set == nil {
		set = map[*liveConn]bool{}
		h.groups[conv] = set
	}
	set[c] = true
	return true
}

// listen makes c receive what is pushed on the conversations' channels
// (the notice's list) and returns once the subscriptions are confirmed;
// a connection listens to at most NoticeConversations of them (the rest
// reach it by pull).
//
// joined is the seq up to which the channel's records are not c's (see
// liveConn.groups): unknownJoin until the notice read the member's join.
// Until then the conversations c did not listen to yet hold what their
// channels bring (release); added names them, with the catch-up of each.
func (h *liveHub) listen(ctx context.Context, c *liveConn, joined uint64, convs ...string) (added map[string]*catchUp, _ error) {
	var channels []string
	added = map[string]*catchUp{}
	h.mu.Lock()
	c.mu.Lock()
	for _, g := range convs {
		if _, ok := c.groups[g]; ok {
			c.raiseFloorLocked(g, joined)
			continue
		}
		cu := &catchUp{}
		if !h.addListenerLocked(c, g, joined, cu) {
			break
		}
		added[g] = cu
		// Also a channel this node subscribed already: its confirmation
		// may still be due.
		channels = append(channels, h.store.Keys().ConvChannel(g))
	}
	c.mu.Unlock()
	h.mu.Unlock()
	if len(channels) == 0 {
		return added, nil
	}
	return added, h.sub.Add(ctx, channels...)
}

func (h *liveHub) unlisten(c *liveConn, conv string) {
	h.mu.Lock()
	c.mu.Lock()
	delete(c.groups, conv)
	c.caughtUpLocked(conv)
	c.mu.Unlock()
	empty := false
	if set := h.groups[conv]; set != nil {
		delete(set, c)
		if len(set) == 0 {
			delete(h.groups, conv)
			empty = true
		}
	}
	h.mu.Unlock()
	if empty {
		ctx, cancel := context.WithTimeout(context.Background(), h.store.Config().CallTimeout)
		defer cancel()
		_ = h.dropChannels(ctx, conv)
	}
}

// dropChannels unsubscribes the channels of convs, which had no listener
// here when that was decided. The decision is made under h.mu and the
// unsubscription after it, so a connection may have started listening in
// between: its subscription found the channel still there, or its wait
// was ended by the removal. Such listeners catch up again, and their
// catch-up subscribes anew.
func (h *liveHub) dropChannels(ctx context.Context, convs ...string) error {
	channels := make([]string, len(convs))
	for i, conv := range convs {
		channels[i] = h.store.Keys().ConvChannel(conv)
	}
	err := h.sub.Remove(ctx, channels...)
	for _, conv := range convs {
		h.mu.Lock()
		back := len(h.groups[conv]) > 0
		h.mu.Unlock()
		if back {
			h.recatchListeners(conv)
		}
	}
	return err
}

// dropIfUnheard unsubscribes conv's channel when no connection here
// listens to it: a catch-up may have subscribed it after its last
// listener left.
func (h *liveHub) dropIfUnheard(conv string) {
	h.mu.Lock()
	unheard := len(h.groups[conv]) == 0
	h.mu.Unlock()
	if !unheard {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), h.store.Config().CallTimeout)
	defer cancel()
	if err := h.dropChannels(ctx, conv); err != nil {
		h.log.Warn("unsubscribe a conversation", "conv", conv, "err", err)
	}
}

// refused counts a connection refused for reason.
func (h *liveHub) refused(reason string) { h.metrics.refused.WithLabelValues(reason).Inc() }

// dispatch hands one batch from the bus to its connections.
func (h *liveHub) dispatch(data []byte) {
	b, err := live.Decode(data)
	if err != nil {
		h.log.Warn("undecodable live batch", "err", err)
		return
	}
	now := time.Now().UnixMilli()
	for i := range b.Envelopes {
		e := &b.Envelopes[i]
		if e.SentMS > 0 {
			h.metrics.busLatency.Observe(float64(max(now-e.SentMS, 0)) / 1000)
		}
		switch e.Kind {
		case live.KindPush:
			h.dispatchPush(e)
		case live.KindEphemeral:
			h.dispatchEphemeral(e)
		case live.KindReceipt:
			if e.Receipt != nil {
				frame := jsonFrame(receiptFrame{Type: "receipt", Receipt: *e.Receipt})
				for _, c := range h.targets(e) {
					c.sendReceipt(e.Receipt.Conv, frame)
					h.metrics.receiptsSent.Inc()
				}
			}
		case live.KindRejected:
			if e.Rejected != nil {
				frame := jsonFrame(rejectedFrame{Type: "rejected", Rejected: *e.Rejected})
				for _, c := range h.targets(e) {
					c.send(frame, false)
				}
			}
		case live.KindListen:
			conns, joined := h.targetsJoined(e)
			for i, c := range conns {
				h.follow(c, e.Conv, joined[i], nil, nil, e.Large)
			}
		case live.KindKick:
			for _, c := range h.targets(e) {
				h.closeReplaced(c)
			}
		}
	}
}

// targets are the envelope's connections here (a target whose connection
// is gone or was replaced is skipped: it will pull).
func (h *liveHub) targets(e *live.Envelope) []*liveConn {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := make([]*liveConn, 0, len(e.Targets))
	for _, t := range e.Targets {
		if c := h.conns[t.Conn]; c != nil && c.user == t.User && c.device == t.Device {
			out = append(out, c)
		} else {
			h.metrics.fallbacks.WithLabelValues("connection_gone").Inc()
		}
	}
	return out
}

// targetsJoined is targets with each one's Joined.
func (h *liveHub) targetsJoined(e *live.Envelope) ([]*liveConn, []uint64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	conns := make([]*liveConn, 0, len(e.Targets))
	joined := make([]uint64, 0, len(e.Targets))
	for _, t := range e.Targets {
		if c := h.conns[t.Conn]; c != nil && c.user == t.User && c.device == t.Device {
			conns = append(conns, c)
			joined = append(joined, t.Joined)
		} else {
			h.metrics.fallbacks.WithLabelValues("connection_gone").Inc()
		}
	}
	return conns, joined
}

// groupConns are the connections here listening to a conversation.
func (h *liveHub) groupConns(conv string) []*liveConn {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := make([]*liveConn, 0, len(h.groups[conv]))
	for c := range h.groups[conv] {
		out = append(out, c)
	}
	return out
}

func (h *liveHub) dispatchPush(e *live.Envelope) {
	var rec schemas.Sequenced
	if err := proto.Unmarshal(e.Record, &rec); err != nil || rec.GetMessage() == nil {
		h.log.Warn("undecodable pushed record", "conv", e.Conv)
		return
	}
	sq, err := h.s.openMessage(h.ctx, &rec)
	if err != nil {
		// not pushed: the device pulls it with sync
		h.log.Warn("open a pushed message", "conv", e.Conv, "seq", rec.GetSeq(), "err", err)
		return
	}
	msg := sq.GetMessage()
	frame := messageFrame(sq, 1)
	if len(e.Targets) > 0 {
		conns, joined := h.targetsJoined(e)
		for i, c := range conns {
			// A push to named connections: the membership changed (or
			// the push stage does not know who listens); from now on
			// the connection listens to the conversation's channel.
			if h.follow(c, e.Conv, joined[i], sq, frame, e.Large) {
				c.pushFrame(sq, frame, e.Large)
			}
		}
		return
	}
	leaving := map[string]bool{}
	if msg.GetKind() == schemas.Kind_KIND_MEMBER_LEAVE {
		for _, u := range msg.GetRecipients() {
			leaving[u] = true
		}
	}
	for _, c := range h.groupConns(e.Conv) {
		if leaving[c.user] {
			h.unlisten(c, e.Conv)
			continue
		}
		c.deliver(e.Conv, sq, frame, e.Large)
	}
}

func (h *liveHub) dispatchEphemeral(e *live.Envelope) {
	var m schemas.Message
	if err := proto.Unmarshal(e.Record, &m); err != nil {
		return
	}
	frame := ephemeralFrame(&m)
	conns := h.targets(e)
	if len(e.Targets) == 0 {
		conns = h.groupConns(e.Conv)
	}
	for _, c := range conns {
		if c.user == m.GetSender() {
			continue
		}
		h.metrics.ephemeral.Inc()
		c.send(frame, true)
	}
}

// repushDue pushes again what was not acked in time. Before it does, it
// reads the devices' cursors: an ack through POST /v1/ack on another node
// counts as well.
func (h *liveHub) repushDue(now time.Time) {
	h.pendMu.Lock()
	conns := make([]*liveConn, 0, len(h.withPend))
	for c := range h.withPend {
		conns = append(conns, c)
	}
	h.pendMu.Unlock()
	for _, c := range conns {
		items := c.due(now)
		if len(items) == 0 {
			continue
		}
		cur := h.deviceCursors(c)
		var acked []redisstore.AckItem // acked elsewhere (POST /v1/ack on another node)
		for _, it := range items {
			conv := it.sq.GetMessage().GetConvId()
			if a, ok := cur[conv]; ok && a.Epoch == it.sq.GetEpoch() && a.Seq >= it.sq.GetSeq() {
				acked = append(acked, redisstore.AckItem{Conv: conv, Seq: a.Seq, Epoch: a.Epoch})
				continue
			}
			h.metrics.pushes.WithLabelValues(fmt.Sprint(it.attempt)).Inc()
			c.send(messageFrame(it.sq, it.attempt), false)
		}
		if len(acked) > 0 {
			c.acknowledgedAll(acked)
		}
	}
}

func (h *liveHub) deviceCursors(c *liveConn) map[string]redisstore.Position {
	ctx, cancel := context.WithTimeout(h.ctx, h.store.Config().CallTimeout)
	defer cancel()
	cur, err := h.s.router.DeviceCursors(ctx, c.user, c.device)
	if err != nil {
		h.log.Warn("read device cursors before pushing again", "err", err)
	}
	return cur
}

// heartbeat extends every lease, pings every connection and closes those
// the client has been silent on for too long.
func (h *liveHub) heartbeat(now time.Time) {
	conns := h.connections()
	h.deadlines.compact(conns)
	// Only the connections whose registration returned are extended (and
	// can be found replaced): one still registering sets its lease itself,
	// and its device's entry may name the connection it replaces.
	refs := make([]redisstore.LeaseRef, 0, len(conns))
	for _, c := range conns {
		if c.leased.Load() {
			refs = append(refs, redisstore.LeaseRef{User: c.user, Device: c.device, Conn: c.id})
		}
	}
	ctx, cancel := context.WithTimeout(h.ctx, h.store.Config().CallTimeout)
	defer cancel()
	replaced, err := h.store.RefreshPresence(ctx, h.cfg.Node, refs, h.cfg.PresenceTTL, now)
	if err != nil {
		// A user whose refresh failed fails alone (their leases are tried
		// again next heartbeat): replaced still names what the other
		// users' replies found taken.
		h.log.Warn("refresh presence", "err", err)
	}
	// A newer connection of the device took its entry on another node,
	// and the word to close this one did not come (the bus was down):
	// it is closed now, as the kick would have.
	taken := make(map[string]bool, len(replaced))
	for _, id := range replaced {
		taken[id] = true
	}
	limit := now.Add(-h.cfg.HeartbeatTimeout).UnixMilli()
	for _, c := range conns {
		if taken[c.id] { // only leased connections were named
			h.closeReplaced(c)
			continue
		}
		if c.lastSeen.Load() < limit {
			if c.close(CloseHeartbeat, "no frame within the heartbeat timeout") {
				h.metrics.heartbeatCloses.Inc()
			}
			continue
		}
		c.send(pingFrame, true)
	}
}
