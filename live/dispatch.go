package live

import (
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/offlinebox/offlinebox/schemas"
)

// The hub's loop hands what the bus brings to the connections here. It
// takes no lock of its own: it looks connections up in the index
// (liveIndex.mu, released before it sends) and each send takes the
// connection's mu.

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

// dispatch hands one batch from the bus to its connections.
func (h *liveHub) dispatch(data []byte) {
	b, err := Decode(data)
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
		case KindPush:
			h.dispatchPush(e)
		case KindEphemeral:
			h.dispatchEphemeral(e)
		case KindReceipt:
			if e.Receipt != nil {
				frame := jsonFrame(receiptFrame{Type: "receipt", Receipt: *e.Receipt})
				for _, c := range h.targets(e) {
					c.sendReceipt(e.Receipt.Conv, frame)
					h.metrics.receiptsSent.Inc()
				}
			}
		case KindRejected:
			if e.Rejected != nil {
				frame := jsonFrame(rejectedFrame{Type: "rejected", Rejected: *e.Rejected})
				for _, c := range h.targets(e) {
					c.send(frame, false)
				}
			}
		case KindListen:
			conns, joined := h.targetsJoined(e)
			for i, c := range conns {
				h.follow(c, e.Conv, joined[i], nil, nil, e.Large)
			}
		case KindKick:
			for _, c := range h.targets(e) {
				h.closeReplaced(c)
			}
		}
	}
}

func (h *liveHub) dispatchPush(e *Envelope) {
	var rec schemas.Sequenced
	if err := proto.Unmarshal(e.Record, &rec); err != nil || rec.GetMessage() == nil {
		h.log.Warn("undecodable pushed record", "conv", e.Conv)
		return
	}
	sq, err := h.deps.Open(h.ctx, &rec)
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
	for _, c := range h.index.listeners(e.Conv) {
		if leaving[c.user] {
			h.unlisten(c, e.Conv)
			continue
		}
		c.deliver(e.Conv, sq, frame, e.Large)
	}
}

func (h *liveHub) dispatchEphemeral(e *Envelope) {
	var m schemas.Message
	if err := proto.Unmarshal(e.Record, &m); err != nil {
		return
	}
	frame := ephemeralFrame(&m)
	conns := h.targets(e)
	if len(e.Targets) == 0 {
		conns = h.index.listeners(e.Conv)
	}
	for _, c := range conns {
		if c.user == m.GetSender() {
			continue
		}
		h.metrics.ephemeral.Inc()
		c.send(frame, true)
	}
}

// targets are the envelope's connections here (a target whose connection
// is gone or was replaced is skipped: it will pull).
func (h *liveHub) targets(e *Envelope) []*liveConn {
	conns, _, gone := h.index.targets(e, false)
	h.countGone(gone)
	return conns
}

// targetsJoined is targets with each one's Joined.
func (h *liveHub) targetsJoined(e *Envelope) ([]*liveConn, []uint64) {
	conns, joined, gone := h.index.targets(e, true)
	h.countGone(gone)
	return conns, joined
}

// countGone counts targets whose connection was gone as fallbacks to the
// pull.
func (h *liveHub) countGone(gone int) {
	if gone > 0 {
		h.metrics.fallbacks.WithLabelValues("connection_gone").Add(float64(gone))
	}
}
