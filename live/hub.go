package live

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/offlinebox/offlinebox/edge"
	"github.com/offlinebox/offlinebox/redisstore"
	"github.com/offlinebox/offlinebox/redisstore/readpath"
)

// liveHub holds this node's live connections: it reads the node's channel
// and the channels of the conversations its connections listen to (one
// subscription per conversation, whatever the connections here), hands
// pushes to connections, pushes again what was not acked, keeps presence
// leases alive and closes dead peers.
type liveHub struct {
	cfg     Config
	deps    Deps
	store   *redisstore.Store // the main store: presence, conversations
	router  *redisstore.InboxRouter
	reads   *readpath.Reader
	acker   *edge.Acker
	bus     *Bus
	metrics *liveMetrics
	log     *slog.Logger
	typing  *userBudgets // the users' ephemeral buckets (budget.go, its own lock)

	// startOnce runs start once; startErr, sub, ctx, cancel and done are
	// written inside it and only read after it (close, the loops).
	startOnce sync.Once
	startErr  error
	sub       *Subscription
	ctx       context.Context
	cancel    context.CancelFunc
	done      chan struct{}

	// The hub's locks, from outermost to innermost: index.mu, then a
	// connection's mu (liveConn.mu), then withPend.mu. The others
	// (writes.mu, resub.mu, pull.mu, relist.mu, and those of admission,
	// deadlines, typing and the batchers) are each taken alone, with none
	// of the live channel's other locks held inside them; but for the ack
	// flusher's flushing, held across one flush with the locks the flush
	// takes (the flusher's mu, the raises', a connection's) inside it, and
	// never taken with another held.

	// index finds the connections here by id, device, user and
	// conversation (index.go; index.mu is the outermost lock).
	index liveIndex
	// withPend lists the connections with pushes not acked
	// (pending.go; withPend.mu is the innermost lock).
	withPend pendingSet
	// writes holds the writes deferred while the hub hands out what the
	// bus brought (deferral.go).
	writes writeDeferral

	// admission holds the node's bounds on connections (its own lock).
	admission *liveAdmission
	// deadlines are the connections' token ends (their own lock).
	deadlines tokenDeadlines
	// running counts the connections' goroutines, which close waits for.
	running sync.WaitGroup

	// The batchers of what connections hand the store and the bus, each
	// behind its own lock.
	receipts *receiptCoalescer
	raises   *raiseBatcher
	pushes   *pushedBatcher
	acks     *ackFlusher

	// catchUps wait for a worker (catchup.go); dispatchRuns are
	// finished ones, run by the dispatcher in turn with the channels'
	// records.
	catchUps     chan catchUpJob
	dispatchRuns chan func()
	// resub holds the catch-ups after a resubscription that found the
	// workers' queue full, for the dispatcher to turn into notices
	// (resubscribe.go).
	resub fullCatchUps
	// pull holds the conversations per connection whose catch-up after a
	// resubscription found the queue full, for a pass that names them to
	// each device in one notice (resubscribe.go).
	pull pullPasses
	// relists runs the passes that read the connections' conversations
	// again after the node's own channel was resubscribed (relist.go).
	relists passGate
	// beforeSubscribe, when set (tests), runs before a catch-up
	// subscribes a conversation's channel.
	beforeSubscribe func(conv string)
}

func newLiveHub(cfg Config, deps Deps, m *liveMetrics) *liveHub {
	st := deps.Router.Main()
	h := &liveHub{cfg: cfg, deps: deps, store: st, router: deps.Router, reads: deps.Reads, acker: deps.Acker,
		bus: NewBusFormat(st.Client(), st.Config().CallTimeout, cfg.BusFormat), metrics: m, log: deps.Logger.With("node", cfg.Node),
		index: newLiveIndex(), withPend: newPendingSet(), admission: newLiveAdmission(cfg),
		catchUps: make(chan catchUpJob, catchUpQueue), dispatchRuns: make(chan func(), dispatchQueue),
		resub: newFullCatchUps()}
	if h.reads == nil {
		h.reads = readpath.New(deps.Router)
	}
	h.typing = newUserBudgets(h.cfg)
	h.receipts = newReceiptCoalescer(h)
	h.raises = newRaiseBatcher(h)
	h.pushes = newPushedBatcher(h)
	h.acks = newAckFlusher(h)
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
		go h.acks.run(h.ctx)
		for range catchUpWorkers {
			go h.catchUpLoop()
		}
	})
	return h.startErr
}

// close shuts every connection with CloseGoingAway, stops the loops and
// writes what they hold: the held acks first, then the raises they
// queued, so that no ack taken is lost.
func (h *liveHub) close() {
	if h.cancel == nil {
		return
	}
	for _, c := range h.index.all() {
		c.close(CloseGoingAway, "server shutting down; reconnect")
	}
	h.cancel()
	h.sub.Close()
	<-h.done
	// The connections unregister (presence, channels) on their own
	// goroutines; those are waited for, a while, so that an ack frame
	// read before the close is held before the last flush (one read
	// after it goes the synchronous way).
	ended := make(chan struct{})
	go func() { h.running.Wait(); close(ended) }()
	select {
	case <-ended:
	case <-time.After(closeWait):
		h.log.Warn("live connections still ending at shutdown")
	}
	h.acks.close(h.startErr == nil)
	h.raises.flushNow()
	h.pushes.flushNow()
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
			h.writes.begin()
			h.dispatch(data)
			h.dispatchWaiting()
			wd.dispatched()
		case f := <-h.dispatchRuns:
			h.writes.begin()
			f()
			wd.dispatched()
		case <-wd.C():
			wd.expired()
		case <-h.resub.signal:
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

// register adds a connection, replacing an older one of the same device
// here or on another node.
func (h *liveHub) register(ctx context.Context, c *liveConn) (redisstore.Presence, bool, error) {
	old := h.index.add(c)
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
		h.kick(ctx, prev.Node, Target{User: c.user, Device: c.device, Conn: prev.Conn})
	}
	return prev, had, nil
}

func (h *liveHub) kick(ctx context.Context, node string, t Target) {
	kick := Batch{Envelopes: []Envelope{{Kind: KindKick, Targets: []Target{t}}}}
	if _, err := h.bus.PublishBatch(ctx, h.store.Keys().NodeChannel(node), kick); err != nil {
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

// unregister removes a closed connection and marks its presence closed.
func (h *liveHub) unregister(c *liveConn) {
	drop := h.index.remove(c, &h.withPend)
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
// else comes reaches it by pull). h.index.mu and c.mu are held.
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
	set := h.index.groups[conv]
	if set == nil {
		set = map[*liveConn]bool{}
		h.index.groups[conv] = set
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
	h.index.mu.Lock()
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
	h.index.mu.Unlock()
	if len(channels) == 0 {
		return added, nil
	}
	return added, h.sub.Add(ctx, channels...)
}

func (h *liveHub) unlisten(c *liveConn, conv string) {
	h.index.mu.Lock()
	c.mu.Lock()
	delete(c.groups, conv)
	c.caughtUpLocked(conv)
	c.mu.Unlock()
	empty := false
	if set := h.index.groups[conv]; set != nil {
		delete(set, c)
		if len(set) == 0 {
			delete(h.index.groups, conv)
			empty = true
		}
	}
	h.index.mu.Unlock()
	if empty {
		ctx, cancel := context.WithTimeout(context.Background(), h.store.Config().CallTimeout)
		defer cancel()
		_ = h.dropChannels(ctx, conv)
	}
}

// dropChannels unsubscribes the channels of convs, which had no listener
// here when that was decided. The decision is made under h.index.mu and the
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
		if h.index.heard(conv) {
			h.recatchListeners(conv)
		}
	}
	return err
}

// dropIfUnheard unsubscribes conv's channel when no connection here
// listens to it: a catch-up may have subscribed it after its last
// listener left.
func (h *liveHub) dropIfUnheard(conv string) {
	if h.index.heard(conv) {
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

// repushDue pushes again what was not acked in time. Before it does, it
// reads the devices' cursors: an ack through POST /v1/ack on another node
// counts as well.
func (h *liveHub) repushDue(now time.Time) {
	for _, c := range h.withPend.list() {
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
	cur, err := h.router.DeviceCursors(ctx, c.user, c.device)
	if err != nil {
		h.log.Warn("read device cursors before pushing again", "err", err)
	}
	return cur
}

// heartbeat extends every lease, pings every connection and closes those
// the client has been silent on for too long.
func (h *liveHub) heartbeat(now time.Time) {
	conns := h.index.all()
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
