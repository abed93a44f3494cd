package live

import (
	"context"
	"errors"
	"sort"

	"github.com/offlinebox/offlinebox/edge"
	"github.com/offlinebox/offlinebox/redisstore"
	"github.com/offlinebox/offlinebox/redisstore/readpath"
	"github.com/offlinebox/offlinebox/schemas"
)

// A connection that starts listening to a conversation closes the gap
// itself: Redis pub/sub keeps nothing for a subscriber that is not there
// yet, so whatever the push stage published on the conversation's channel
// before this node's subscription took is lost to it. Once the
// subscription is confirmed, the records after what the connection has
// are read from the store (the pull path's timeline) and pushed; what the
// channel brings meanwhile is held and pushed after them, so that the
// device gets every record once and in seq order.

const (
	// catchUpWorkers read the store for catch-ups, off the dispatcher.
	catchUpWorkers = 4
	// catchUpQueue bounds the catch-ups waiting for a worker; past it a
	// connection does not listen and is told to pull.
	catchUpQueue = 1024
	// dispatchQueue bounds the finished catch-ups waiting for the
	// dispatcher.
	dispatchQueue = 256
)

// catchUp is a conversation a connection listens to whose gap is not
// closed yet: the channel's records wait in held.
type catchUp struct {
	held     []heldPush
	overflow bool   // more came than held keeps
	maxSeen  uint64 // the highest seq the channel brought meanwhile
	// again: the channel was resubscribed while this catch-up ran, so
	// its read may predate what the channel lost; another one follows.
	again bool
}

type heldPush struct {
	sq    *schemas.Sequenced
	frame []byte // nil: encoded when pushed
	large bool
}

func (cu *catchUp) hold(p heldPush, limit int) {
	cu.maxSeen = max(cu.maxSeen, p.sq.GetSeq())
	if len(cu.held) >= limit {
		cu.overflow = true
		return
	}
	cu.held = append(cu.held, p)
}

// heldLimit bounds the records a catch-up holds per conversation.
func (h *liveHub) heldLimit() int { return max(2*h.cfg.ReplayMax, 8) }

type catchUpJob struct {
	c    *liveConn
	conv string
	// cu is the catch-up the job closes: a newer one may replace it
	// meanwhile (the connection left and listened again), and its
	// read is then not the one that closes the gap.
	cu    *catchUp
	from  uint64 // the connection has, or is not meant, what is up to it
	epoch uint64 // of from; 0 when unknown
	large bool
	// resubscribed: the job follows a resubscription; the device may
	// have acked more elsewhere (POST /v1/ack on another node).
	resubscribed bool
}

// catchUpDone is what a worker read for a catch-up, for the dispatcher.
type catchUpDone struct {
	c    *liveConn
	conv string
	cu   *catchUp // the job's
	// push: the records after the job's from, in seq order.
	push  []*schemas.Sequenced
	large bool
	// notice, when set, goes first: too much is missing to push, the
	// device pulls up to covered. Nothing up to covered is pushed (the
	// job's from, without a notice).
	notice  []byte
	covered uint64
	known   knownConv
	// drop: the connection stops listening (no longer a member, or the
	// subscription could not be made; the notice says to pull).
	drop bool
	// pull: the catch-up did not fit the workers' queue; the device is
	// told to pull conv, in one notice with the connection's others
	// (pullSoon).
	pull bool
}

// follow makes c listen to conv, the channel's records up to floor not
// being c's (a push to named connections: the membership changed). A
// connection that did not listen to conv yet catches up (see above): sq,
// the record that came by name (nil for a listen envelope), waits with
// what the channel brings. It reports whether sq is to be pushed now.
// A catch-up that does not fit the workers' queue is left to the pull
// (catchUpFull, the one policy of doc.go): c keeps listening and is
// told of conv by name. It runs on the dispatcher and makes no call to
// Redis.
func (h *liveHub) follow(c *liveConn, conv string, floor uint64, sq *schemas.Sequenced, frame []byte, large bool) bool {
	job, push := h.startFollowing(c, conv, floor, sq, frame, large)
	if job != nil && !h.queueCatchUp(*job) {
		h.catchUpFull(*job)
	}
	return push
}

// startFollowing is follow up to its catch-up, which it returns for the
// caller to queue (nil when c is closed, listens to conv already or
// listens to as many conversations as it may), with whether sq is to be
// pushed now.
func (h *liveHub) startFollowing(c *liveConn, conv string, floor uint64, sq *schemas.Sequenced, frame []byte, large bool) (*catchUpJob, bool) {
	h.index.mu.Lock()
	if h.index.conns[c.id] != c {
		// closed since it was named: nothing to listen for
		h.index.mu.Unlock()
		return nil, false
	}
	c.mu.Lock()
	if _, ok := c.groups[conv]; ok {
		c.raiseFloorLocked(conv, floor)
		cu := c.catching[conv]
		if cu != nil && sq != nil {
			cu.hold(heldPush{sq: sq, frame: frame, large: large}, h.heldLimit())
		}
		c.mu.Unlock()
		h.index.mu.Unlock()
		return nil, cu == nil
	}
	cu := &catchUp{}
	if !h.addListenerLocked(c, conv, floor, cu) {
		c.mu.Unlock()
		h.index.mu.Unlock()
		return nil, true // pushed by name; what follows reaches c by pull
	}
	job := catchUpJob{c: c, conv: conv, cu: cu, from: floor, large: large}
	if sq != nil {
		// The record named c is c's (a large group's joiner is pushed
		// its join), but nothing the device acked or was told of.
		job.epoch = sq.GetEpoch()
		if seq := sq.GetSeq(); seq > 0 {
			job.from = min(job.from, seq-1)
		}
		if a, ok := c.acked[conv]; ok && a.epoch == job.epoch {
			job.from = max(job.from, a.seq)
		}
		if k, ok := c.known[conv]; ok && k.epoch == job.epoch {
			job.from = max(job.from, k.seq)
		}
	}
	if sq != nil {
		cu.hold(heldPush{sq: sq, frame: frame, large: large}, h.heldLimit())
	}
	c.mu.Unlock()
	h.index.mu.Unlock()
	return &job, false
}

// queueCatchUp hands j to the workers, unless their queue is full.
func (h *liveHub) queueCatchUp(j catchUpJob) bool {
	select {
	case h.catchUps <- j:
		return true
	default:
		return false
	}
}

// release ends the catch-ups of the conversations the notice read (after
// its subscriptions were confirmed, so the notice covers what their
// channels carried before): each one's floor is the seq the user joined
// it at, and what the channel brought meanwhile after it is pushed.
func (h *liveHub) release(c *liveConn, floors map[string]releaseAt) {
	if len(floors) == 0 {
		return
	}
	h.onDispatcher(func() {
		for conv, r := range floors {
			c.mu.Lock()
			current := c.caughtUpIfLocked(conv, r.cu)
			if _, ok := c.groups[conv]; ok && current {
				c.groups[conv] = r.floor
			}
			c.mu.Unlock()
			if current {
				h.pushHeld(c, conv, r.cu, r.floor)
				if r.cu.again {
					h.recatch(c, conv)
				}
			}
		}
	})
}

// releaseAt is where the notice's catch-up cu of a conversation ends.
type releaseAt struct {
	floor uint64
	cu    *catchUp
}

// onDispatcher runs f on the dispatcher, in turn with the channels'
// records.
func (h *liveHub) onDispatcher(f func()) {
	select {
	case h.dispatchRuns <- f:
	case <-h.ctx.Done():
	}
}

func (h *liveHub) catchUpLoop() {
	for {
		select {
		case <-h.ctx.Done():
			return
		case j := <-h.catchUps:
			d := h.catchUp(j)
			h.onDispatcher(func() { h.finish(d) })
		}
	}
}

// catchUp subscribes the conversation's channel, waits for the server's
// confirmation, then reads what the connection lacks.
func (h *liveHub) catchUp(j catchUpJob) catchUpDone {
	d := catchUpDone{c: j.c, conv: j.conv, cu: j.cu, large: j.large, covered: j.from}
	if hook := h.beforeSubscribe; hook != nil {
		hook(j.conv)
	}
	ctx := h.ctx
	if err := h.sub.Add(ctx, h.store.Keys().ConvChannel(j.conv)); err != nil {
		h.log.Warn("listen to a conversation", "conv", j.conv, "err", err)
		h.metrics.fallbacks.WithLabelValues("listen_failed").Inc()
		d.drop, d.notice = true, jsonFrame(pullAllNotice())
		return d
	}
	if j.resubscribed {
		if a, ok := h.deviceCursors(j.c)[j.conv]; ok && (j.epoch == 0 || a.Epoch == j.epoch) {
			j.from, j.epoch = max(j.from, a.Seq), a.Epoch
			d.covered = j.from
		}
	}
	page, err := h.reads.ReadPage(ctx, j.c.user, j.conv, readpath.PageQuery{After: j.from, HasAfter: true, Limit: h.cfg.ReplayMax})
	switch {
	case errors.Is(err, readpath.ErrNotMember):
		d.drop = true // left since: nothing to push
		return d
	case err != nil:
		h.log.Warn("catch up a conversation", "conv", j.conv, "err", err)
		h.metrics.fallbacks.WithLabelValues("catch_up_failed").Inc()
		d.notice = jsonFrame(pullAllNotice())
		return d
	}
	d.known = knownConv{epoch: page.Epoch, seq: page.MaxSeq, large: j.large}
	if page.HasMore || page.Incomplete || (j.epoch != 0 && page.Epoch != j.epoch) {
		// Too much to push (or the timeline was rebuilt): the device pulls.
		d.notice = jsonFrame(h.catchUpNotice(ctx, j.c, j.conv, page))
		d.covered = page.MaxSeq
		h.metrics.notices.WithLabelValues("pull").Inc()
		return d
	}
	for _, sq := range page.Messages {
		open, err := h.deps.Open(ctx, sq)
		if err != nil {
			// not pushed: the device pulls it with sync
			h.log.Warn("open a caught-up message", "conv", j.conv, "seq", sq.GetSeq(), "err", err)
			continue
		}
		d.push = append(d.push, open)
	}
	return d
}

// finish pushes what a catch-up read, then what the channel brought
// meanwhile, in seq order and each once; from then on the channel's
// records go straight to the connection. It runs on the dispatcher.
func (h *liveHub) finish(d catchUpDone) {
	c := d.c
	c.mu.Lock()
	cu := d.cu
	current := c.caughtUpIfLocked(d.conv, cu)
	_, listening := c.groups[d.conv]
	if d.notice != nil && d.known.seq > 0 {
		c.learnLocked(d.conv, d.known)
	}
	c.mu.Unlock()
	if !listening {
		h.dropIfUnheard(d.conv) // the catch-up may have subscribed after the last listener left
		return
	}
	if !current {
		return // left and listens anew: the newer catch-up closes the gap
	}
	if d.drop {
		h.unlisten(c, d.conv)
	}
	if d.notice != nil {
		c.send(d.notice, false)
	}
	if d.pull {
		h.pullSoon(c, d.conv)
	}
	if d.drop {
		return
	}
	// What the store read and what came meanwhile (the record named c
	// too, which may be one the store does not show c: a large group's
	// joiner is pushed its join) go out merged in seq order.
	read := make([]heldPush, 0, len(d.push)+len(cu.held))
	for _, sq := range d.push {
		read = append(read, heldPush{sq: sq, large: d.large})
		cu.maxSeen = max(cu.maxSeen, sq.GetSeq())
	}
	cu.held = append(read, cu.held...)
	h.pushHeld(c, d.conv, cu, d.covered)
	if cu.again {
		h.recatch(c, d.conv)
	}
}

// pushHeld pushes the held records after last in seq order, each seq
// once, and raises the connection's floor past what it was pushed: a
// record the store read brought and the channel brings late is not
// pushed twice.
func (h *liveHub) pushHeld(c *liveConn, conv string, cu *catchUp, last uint64) {
	if cu.overflow {
		// More came meanwhile than is held: the device pulls the lot.
		c.send(jsonFrame(pullAllNotice()), false)
		last = max(last, cu.maxSeen)
		h.metrics.fallbacks.WithLabelValues("catch_up_overflow").Inc()
	} else {
		sort.SliceStable(cu.held, func(i, j int) bool { return cu.held[i].sq.GetSeq() < cu.held[j].sq.GetSeq() })
		for _, p := range cu.held {
			if p.sq.GetSeq() > last {
				c.pushFrame(p.sq, p.frame, p.large)
				last = p.sq.GetSeq()
			}
		}
	}
	c.mu.Lock()
	c.raiseFloorLocked(conv, last)
	c.mu.Unlock()
}

// pullAllNotice tells the device to sync without naming conversations
// (what is missing could not be read or held).
func pullAllNotice() noticeFrame {
	return noticeFrame{Type: "notice", Conversations: []noticeConvJSON{}, Truncated: true}
}

// pullNotice names in one notice the conversations a connection is left
// to pull because their catch-ups did not fit the workers' queue: after
// a resubscription there may be many, and a notice each would swamp the
// device with the same word.
type pullNotice struct {
	frame noticeFrame
	told  map[string]knownConv
}

func newPullNotice() *pullNotice {
	return &pullNotice{frame: noticeFrame{Type: "notice", Conversations: []noticeConvJSON{}}, told: map[string]knownConv{}}
}

// name adds the conversation of it, with its access a and the device's
// cursors cur (what the device acked counts in a's epoch only).
func (n *pullNotice) name(it readpath.ConvItem, a redisstore.ConvAccess, cur map[string]redisstore.Position) {
	var acked uint64
	if p, ok := cur[it.Conv]; ok && p.Epoch == a.Epoch {
		acked = p.Seq
	}
	nc := noticeConvJSON{ConvID: it.Conv, Epoch: a.Epoch, MaxSeq: max(it.LastSeq, a.Seq), DeviceAckedSeq: acked,
		Unread: it.Unread, Mentions: it.Mentions}
	n.frame.add(nc)
	n.told[it.Conv] = knownConv{epoch: a.Epoch, seq: nc.MaxSeq, large: a.Large}
}

// send records in c.known what the notice tells (the device pulls up to
// it) and queues it, unless it names nothing and says nothing to sync.
func (n *pullNotice) send(c *liveConn) {
	if len(n.told) == 0 && !n.frame.Truncated {
		return
	}
	c.mu.Lock()
	for conv, t := range n.told {
		c.learnLocked(conv, t)
	}
	c.mu.Unlock()
	c.send(jsonFrame(n.frame), false)
}

// readAccess reads what a notice names c's conversations convs with
// besides their list entries: their access, and the device's cursors.
func (h *liveHub) readAccess(ctx context.Context, c *liveConn, convs []string) (map[string]redisstore.ConvAccess, map[string]redisstore.Position, error) {
	access, err := h.router.Main().ConversationAccess(ctx, c.user, convs)
	if err != nil {
		return nil, nil, err
	}
	cur, err := h.router.DeviceCursors(ctx, c.user, c.device)
	if err != nil {
		return nil, nil, err
	}
	return access, cur, nil
}

// catchUpNotice is the notice of one conversation a connection started
// listening to with more missing than a push should carry. The
// conversation just had news, so it heads the conversation list: its
// counters come from the list's first page; when it is not there, the
// notice says to sync.
func (h *liveHub) catchUpNotice(ctx context.Context, c *liveConn, conv string, page readpath.Page) noticeFrame {
	list, err := h.reads.ListConversations(ctx, c.user, c.device, readpath.ListCursor{}, min(edge.MaxListLimit, 20))
	if err != nil {
		return pullAllNotice()
	}
	for _, it := range list.Items {
		if it.Conv != conv {
			continue
		}
		acked := it.Acked
		c.mu.Lock()
		if a, ok := c.acked[conv]; ok && a.epoch != page.Epoch {
			acked = 0
		}
		c.mu.Unlock()
		f := noticeFrame{Type: "notice"}
		f.add(noticeConvJSON{ConvID: conv, Epoch: page.Epoch, MaxSeq: max(page.MaxSeq, it.LastSeq), DeviceAckedSeq: acked,
			Unread: it.Unread, Mentions: it.Mentions})
		return f
	}
	return pullAllNotice()
}
