package live

import "github.com/offlinebox/offlinebox/redisstore"

// pushedBatcher gathers, per conversation and recipient, the newest seq
// this node handed to a live connection of theirs (queued for its
// socket's writer, not yet acked) and raises those pushed cursors on the
// hub's tick: one pipelined call for all of them (a script call per
// conversations sharing a hash slot), never a call per frame. A raise
// that went up is a receipt event for the senders, as for delivered.
// Large groups keep no cursors, so their pushes are not gathered. A node
// that stops before its batch is sent loses those raises: a sender then
// sees stored until the recipient's ack shows delivered.
type pushedBatcher struct {
	markFlusher // its mu guards marks
	marks       map[pushedKey]*pushedMark
}

type pushedKey struct {
	conv   string
	epoch  uint64
	member string
}

type pushedMark struct {
	seq     uint64
	senders map[string]uint64 // sender → their newest seq pushed
}

func newPushedBatcher(h *liveHub) *pushedBatcher {
	pb := &pushedBatcher{marks: map[pushedKey]*pushedMark{}}
	pb.markFlusher = markFlusher{h: h, kind: redisstore.ReceiptPushed, what: "pushed", takeLocked: pb.takeLocked}
	return pb
}

// add notes that seq of sender was pushed to member; over the bound
// (maxDeferredMarks recipients and conversations waiting) it is dropped.
func (pb *pushedBatcher) add(conv string, epoch uint64, member, sender string, seq uint64) {
	if sender == member {
		return // nobody is shown their own message as pushed
	}
	k := pushedKey{conv, epoch, member}
	pb.mu.Lock()
	defer pb.mu.Unlock()
	m := pb.marks[k]
	if m == nil {
		if len(pb.marks) >= maxDeferredMarks {
			return
		}
		m = &pushedMark{senders: map[string]uint64{}}
		pb.marks[k] = m
	}
	m.seq = max(m.seq, seq)
	m.senders[sender] = max(m.senders[sender], seq)
}

func (pb *pushedBatcher) takeLocked() ([]redisstore.ReceiptMark, []map[string]uint64) {
	if len(pb.marks) == 0 {
		return nil, nil
	}
	marks := make([]redisstore.ReceiptMark, 0, len(pb.marks))
	senders := make([]map[string]uint64, 0, len(pb.marks))
	for k, m := range pb.marks {
		marks = append(marks, redisstore.ReceiptMark{Conv: k.conv, Epoch: k.epoch, Member: k.member, Seq: m.seq})
		senders = append(senders, m.senders)
	}
	pb.marks = map[pushedKey]*pushedMark{}
	return marks, senders
}
