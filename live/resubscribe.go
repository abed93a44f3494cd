package live

import (
	"context"
	"fmt"
	"maps"
	"slices"

	"github.com/offlinebox/offlinebox/redisstore"
	"github.com/offlinebox/offlinebox/redisstore/readpath"
)

// When the bus connection drops (a Redis restart, a network blip, a
// failover), go-redis reconnects and resubscribes by itself; what was
// published in between reached nobody here, and an online device does
// not pull on its own. The server's unasked confirmation of a channel
// says so: every connection listening to its conversation catches up
// again, from what it has, through the same workers' queue.

// noteResubscribed runs on the bus's reader, before anything the channel
// carries after the resubscription is handed on: the conversation's
// listeners here are marked catching up first, so that those records wait
// for the catch-up and go out after what it reads, in seq order.
func (h *liveHub) noteResubscribed(channel string) {
	h.metrics.resubscribed.Inc()
	conv, ok := h.convOfChannel(channel)
	if !ok {
		if channel == h.store.Keys().NodeChannel(h.cfg.Node) {
			h.relistSoon()
		}
		return
	}
	h.recatchListeners(conv)
}

// recatchListeners makes every connection listening to conv here catch
// up again, from what it has, through the workers' queue (a full queue:
// the dispatcher tells them to pull).
func (h *liveHub) recatchListeners(conv string) {
	conns := h.index.listeners(conv)
	var full []catchUpJob
	for _, c := range conns {
		job, ok := h.markRecatch(c, conv)
		if ok && !h.queueCatchUp(job) {
			full = append(full, job)
		}
	}
	if len(full) == 0 {
		return
	}
	h.resub.add(full...)
}

// convOfChannel is the conversation whose channel this is.
func (h *liveHub) convOfChannel(channel string) (string, bool) {
	return h.store.Keys().ConvOfChannel(channel)
}

// noticeResubscribedFull ends the catch-ups that found the workers'
// queue full, their conversations left to the pull (pullSoon). It runs
// on the dispatcher.
func (h *liveHub) noticeResubscribedFull() {
	for _, j := range h.resub.take() {
		h.catchUpFull(j)
	}
}

// catchUpFull ends j, which found the workers' queue full, by the one
// policy of every catch-up (doc.go): the connection keeps listening,
// and the conversation is left to the pull, named to the device with
// its counters in one notice with its others (pullSoon), whose pass
// subscribes the channel before it reads them. So the notice covers
// what the channel brought meanwhile, which is not pushed (a catch-up
// that found the queue full holds nothing), and what comes after it is
// pushed. Each counts as a fallback. It runs on the dispatcher.
func (h *liveHub) catchUpFull(j catchUpJob) {
	h.metrics.fallbacks.WithLabelValues("catch_up_full").Inc()
	covered := max(j.from, j.cu.maxSeen)
	j.cu.held, j.cu.overflow = nil, false
	h.finish(catchUpDone{c: j.c, conv: j.conv, cu: j.cu, covered: covered, large: j.large, pull: true})
}

// recatch makes c catch up on conv once more: the channel was
// resubscribed while its last catch-up ran. It runs on the dispatcher.
func (h *liveHub) recatch(c *liveConn, conv string) {
	job, ok := h.markRecatch(c, conv)
	if ok && !h.queueCatchUp(job) {
		h.catchUpFull(job)
	}
}

// markRecatch marks c catching up on conv after what it has (was pushed,
// acked or told of): the channel's records in between reached nobody
// here. A catch-up still running is marked to run again once done; ok
// is false then, and when c does not listen to conv.
func (h *liveHub) markRecatch(c *liveConn, conv string) (_ catchUpJob, ok bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	floor, listening := c.groups[conv]
	if cu := c.catching[conv]; cu != nil {
		cu.again = true
		return catchUpJob{}, false
	}
	if !listening || floor == unknownJoin {
		return catchUpJob{}, false
	}
	job := catchUpJob{c: c, conv: conv, cu: &catchUp{}, from: floor, resubscribed: true}
	if k, ok := c.known[conv]; ok {
		job.epoch, job.large = k.epoch, k.large
		job.from = max(job.from, k.seq)
	}
	if a, ok := c.acked[conv]; ok && (job.epoch == 0 || a.epoch == job.epoch) {
		job.epoch = a.epoch
		job.from = max(job.from, a.seq)
	}
	if c.catching == nil {
		c.catching = map[string]*catchUp{}
	}
	c.catching[conv] = job.cu
	return job, true
}

// A reconnect resubscribes every channel at once, and their catch-ups
// may fill the workers' queue: a connection listening to many
// conversations then has many left to the pull. It is told of them in
// one notice, named with their counters as on connect, not one notice
// each: a pass, one at a time and off the dispatcher, reads the
// conversations of each such connection in turn.

// pullSoon leaves c's conv to the pull, for the pass to name.
func (h *liveHub) pullSoon(c *liveConn, conv string) {
	if h.pull.leave(c, conv) {
		go h.pullPass()
	}
}

// pullPass tells the connections in h.pull, one after another, to pull
// their conversations there, until none is left.
func (h *liveHub) pullPass() {
	stopped := func() bool { return h.ctx.Err() != nil }
	for {
		next := h.pull.next(stopped)
		if next == nil {
			return
		}
		h.tellToPull(next)
	}
}

// takeToPull takes the conversations c is left to pull.
func (h *liveHub) takeToPull(c *liveConn) map[string]bool {
	return h.pull.take(c)
}

// tellToPull sends c one notice naming the conversations it is left to
// pull, in the order of its user's list, each read after its channel's
// subscription was confirmed (listenTo). Their channels are confirmed
// one after another, so the reads start again while more come for c.
// A conversation past those the list reads makes the notice say to
// sync; one the user left is not named.
func (h *liveHub) tellToPull(c *liveConn) {
	ctx, cancel := context.WithTimeout(h.ctx, h.deps.RequestTimeout)
	defer cancel()
	convs := map[string]bool{}
	var items []readpath.ConvItem
	var access map[string]redisstore.ConvAccess
	var cur map[string]redisstore.Position
	for more := h.takeToPull(c); len(more) > 0; more = h.takeToPull(c) {
		c.mu.Lock()
		closed := c.closed
		c.mu.Unlock()
		if closed {
			return
		}
		for conv := range more {
			convs[conv] = true
		}
		err := h.listenTo(ctx, more)
		if err == nil {
			items, _, err = h.liveConversations(ctx, c)
		}
		if err == nil {
			access, cur, err = h.readAccess(ctx, c, slices.Collect(maps.Keys(convs)))
		}
		if err != nil {
			h.log.Warn("read the conversations a connection is left to pull", "err", err)
			c.send(jsonFrame(pullAllNotice()), false)
			return
		}
	}
	notice := newPullNotice()
	for _, it := range items {
		if !convs[it.Conv] {
			continue
		}
		delete(convs, it.Conv)
		if a := access[it.Conv]; a.Member {
			notice.name(it, a, cur)
		}
	}
	for conv := range convs {
		if access[conv].Member {
			notice.frame.Truncated = true // past the list's first NoticeConversations
		}
	}
	notice.send(c)
}

// listenTo subscribes the channels of convs, which a catch-up that did
// not fit the workers' queue may never have subscribed, and returns once
// the server confirmed them: what the pass then reads covers what they
// carried before, and what they carry after is pushed. A connection may
// have left one of them meanwhile; a channel no connection here listens
// to is dropped again.
func (h *liveHub) listenTo(ctx context.Context, convs map[string]bool) error {
	chans := make([]string, 0, len(convs))
	for conv := range convs {
		chans = append(chans, h.store.Keys().ConvChannel(conv))
	}
	if err := h.sub.Add(ctx, chans...); err != nil {
		return fmt.Errorf("listen to the conversations left to the pull: %w", err)
	}
	h.onDispatcher(func() {
		for conv := range convs {
			h.dropIfUnheard(conv)
		}
	})
	return nil
}
