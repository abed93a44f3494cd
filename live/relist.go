package live

import (
	"context"

	"github.com/offlinebox/offlinebox/redisstore"
	"github.com/offlinebox/offlinebox/redisstore/readpath"
)

// What the push stage sent this node by name while its own channel was
// down reached nobody: above all a join, the word to listen to a
// conversation and catch up on it. Once the channel is back, every
// connection here reads its conversations again and listens to those it
// does not yet, each catching up from what the device acked (relist).
// One pass runs at a time; a resubscription during a pass asks for one
// more.

// relistSoon starts a pass over the connections, or asks the running one
// for another. It returns at once: it runs on the bus's reader.
func (h *liveHub) relistSoon() {
	if h.relists.ask() {
		go h.relistPasses()
	}
}

func (h *liveHub) relistPasses() {
	stopped := func() bool { return h.ctx.Err() != nil }
	for {
		h.relistAll()
		if !h.relists.passed(stopped) {
			return
		}
	}
}

// relistAll relists every connection here, one after another, so that
// the pass is one connection's reads at a time for Redis.
func (h *liveHub) relistAll() {
	for _, c := range h.index.all() {
		if h.ctx.Err() != nil {
			return
		}
		if err := h.relist(c); err != nil {
			// The device is told to pull: what it missed is in the store.
			h.log.Warn("read a connection's conversations again", "err", err)
			h.metrics.fallbacks.WithLabelValues("relist_failed").Inc()
			c.send(jsonFrame(pullAllNotice()), false)
		}
	}
}

// relist makes c listen to the conversations of its user it does not
// listen to yet (as many as a connection may), each caught up from what
// the device acked in the conversation's epoch, else from the user's
// join.
func (h *liveHub) relist(c *liveConn) error {
	ctx, cancel := context.WithTimeout(h.ctx, h.deps.RequestTimeout)
	defer cancel()
	items, _, err := h.liveConversations(ctx, c)
	if err != nil {
		return err
	}
	var missing []readpath.ConvItem
	var convs []string
	c.mu.Lock()
	for _, it := range items {
		if _, ok := c.groups[it.Conv]; !ok && !it.Left {
			missing = append(missing, it)
			convs = append(convs, it.Conv)
		}
	}
	c.mu.Unlock()
	if len(missing) == 0 {
		return nil
	}
	access, cur, err := h.readAccess(ctx, c, convs)
	if err != nil {
		return err
	}
	h.onDispatcher(func() { h.followRelisted(c, missing, access, cur) })
	return nil
}

// followRelisted makes c follow the conversations relist found it not
// listening to. The pass comes right after a resubscription whose own
// catch-ups may fill the workers' queue: the conversations whose
// catch-up does not fit are left to the pull (catchUpFull), and c is
// told of them all in one notice, not one each. It runs on the
// dispatcher.
func (h *liveHub) followRelisted(c *liveConn, missing []readpath.ConvItem, access map[string]redisstore.ConvAccess, cur map[string]redisstore.Position) {
	for _, it := range missing {
		a := access[it.Conv]
		if !a.Member {
			continue
		}
		floor := a.Joined
		if p, ok := cur[it.Conv]; ok && p.Epoch == a.Epoch {
			floor = max(floor, p.Seq)
		}
		job, _ := h.startFollowing(c, it.Conv, floor, nil, nil, a.Large)
		if job == nil {
			continue
		}
		if h.queueCatchUp(*job) {
			h.metrics.relisted.Inc()
			continue
		}
		h.catchUpFull(*job)
	}
}
