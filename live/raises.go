package live

import "github.com/offlinebox/offlinebox/redisstore"

// raiseBatcher gathers the delivered marks of acks on this node's sockets
// and raises them together on the hub's tick: every member that acked a
// conversation in one raise of it, the conversations that share a hash
// slot (all of them on a standalone server) in one script call, not a
// call per ack.
// The acks' marks come here once the devices' own cursors were written
// (ackflush.go), so a sender is told "delivered" only of a durable ack;
// the members' delivered cursors wait at most a tick more. A node that
// stops before its batch is sent loses those raises until the members'
// next acks, which raise the cursors past them.
type raiseBatcher struct {
	markFlusher // its mu guards marks and senders
	marks       []redisstore.ReceiptMark
	senders     []map[string]uint64 // per mark: the senders its ack covered on this node
}

func newRaiseBatcher(h *liveHub) *raiseBatcher {
	rb := &raiseBatcher{}
	rb.markFlusher = markFlusher{h: h, kind: redisstore.ReceiptDelivered, what: "delivered", takeLocked: rb.take}
	return rb
}

// maxDeferredMarks bounds the marks waiting; an ack that does not fit
// raises its own at once.
const maxDeferredMarks = 20_000

func (rb *raiseBatcher) room(n int) bool {
	rb.mu.Lock()
	defer rb.mu.Unlock()
	return len(rb.marks)+n <= maxDeferredMarks
}

// addEach queues marks, each with its senders (conv's sender → newest
// seq; may be nil).
func (rb *raiseBatcher) addEach(marks []redisstore.ReceiptMark, senders []map[string]uint64) {
	rb.mu.Lock()
	defer rb.mu.Unlock()
	rb.marks = append(rb.marks, marks...)
	rb.senders = append(rb.senders, senders...)
}

func (rb *raiseBatcher) take() ([]redisstore.ReceiptMark, []map[string]uint64) {
	marks, senders := rb.marks, rb.senders
	rb.marks, rb.senders = nil, nil
	return marks, senders
}
