package api

import (
	"context"
	"net/http"

	"github.com/offlinebox/offlinebox/auth"
	"github.com/offlinebox/offlinebox/redisstore"
	"github.com/offlinebox/offlinebox/redisstore/readpath"
	"github.com/offlinebox/offlinebox/schemas"
)

// Message states as a sender is shown them.
const (
	StateStored    = "stored"
	StatePushed    = "pushed"
	StateDelivered = "delivered"
	StateRead      = "read"
)

// stateOf is the furthest any recipient got: read, delivered (a device
// stored it), pushed (a live connection was written it, not yet acked),
// else stored.
func stateOf(n redisstore.ReceiptCounts) string {
	switch {
	case n.Read > 0:
		return StateRead
	case n.Delivered > 0:
		return StateDelivered
	case n.Pushed > 0:
		return StatePushed
	}
	return StateStored
}

// receiptsJSON answers GET /v1/conversations/{conv}/receipts?seq=N.
type receiptsJSON struct {
	ConvID string `json:"conv_id"`
	Epoch  uint64 `json:"epoch"`
	Seq    uint64 `json:"seq"`
	Sender string `json:"sender"`
	Large  bool   `json:"large"`
	// State is the furthest any recipient got: stored, pushed,
	// delivered, read.
	State string `json:"state"`
	// Pushed, Delivered and Read count the members other than the sender
	// a live connection of theirs was written seq, who stored it (acked
	// on a device) and who read it; Members counts those members. Null in
	// a large group, which keeps no per-member cursors.
	Pushed    *int `json:"pushed"`
	Delivered *int `json:"delivered"`
	Read      *int `json:"read"`
	Members   *int `json:"members"`
	// Direct conversations: the peer's cursors.
	PeerDeliveredSeq *uint64 `json:"peer_delivered_seq,omitempty"`
	PeerReadSeq      *uint64 `json:"peer_read_seq,omitempty"`
}

// receipts answers GET /v1/conversations/{conv}/receipts: for any seq of
// the window, delivered to N of M and read by N of M, from per-member
// cursors (O(log M), no per-message rows).
func (s *Server) receipts(r *http.Request, id auth.Identity) (int, any, error) {
	conv := r.PathValue("conv")
	if err := schemas.ValidID("conv", conv); err != nil {
		return 0, nil, invalidField("", err)
	}
	q := r.URL.Query()
	if err := onlyParams(q, "seq"); err != nil {
		return 0, nil, err
	}
	seq, ok, err := seqParam(q.Get("seq"), "seq")
	if err != nil {
		return 0, nil, err
	}
	if !ok || seq == 0 {
		return 0, nil, badRequest("seq", "is required, a number above 0")
	}
	items := []seqItem{{Field: "seq", Conv: conv, Seq: seq}}
	access, err := s.checkSeqItems(r.Context(), id.User, items)
	if err != nil {
		return 0, nil, err
	}
	a := access[conv]
	if !a.Member {
		// The counts are over current members: a former member is shown
		// neither theirs nor the members' progress since they left.
		return 0, nil, forbidden("not a member of conversation %q now: receipts are shown to current members", conv)
	}
	main := s.router.Main()
	page, err := s.reads.ReadPage(r.Context(), id.User, conv, readpath.PageQuery{After: seq - 1, HasAfter: true, Before: seq + 1, Limit: 1})
	if err != nil {
		return 0, nil, err
	}
	out := receiptsJSON{ConvID: conv, Epoch: a.Epoch, Seq: seq, Large: a.Large, State: StateStored}
	if len(page.Messages) == 1 && page.Messages[0].GetSeq() == seq {
		out.Sender = page.Messages[0].GetMessage().GetSender()
	}
	if a.Large {
		return http.StatusOK, out, nil
	}
	n, err := main.CountReceipts(r.Context(), conv, seq, out.Sender)
	if err != nil {
		return 0, nil, err
	}
	out.Pushed, out.Delivered, out.Read, out.Members = &n.Pushed, &n.Delivered, &n.Read, &n.Others
	out.State = stateOf(n)
	if a.Type == schemas.ConvType_CONV_TYPE_DIRECT {
		peer, err := s.peerOf(r.Context(), conv, id.User)
		if err != nil {
			return 0, nil, err
		}
		rc, err := main.ReceiptsOf(r.Context(), map[string]string{conv: peer})
		if err != nil {
			return 0, nil, err
		}
		d, rd := rc[conv].Delivered, rc[conv].Read
		out.PeerDeliveredSeq, out.PeerReadSeq = &d, &rd
	}
	return http.StatusOK, out, nil
}

// peerOf is the other participant of a direct conversation.
func (s *Server) peerOf(ctx context.Context, conv, user string) (string, error) {
	mem, err := s.router.Main().Members(ctx, conv)
	if err != nil {
		return "", err
	}
	for m := range mem {
		if m != user {
			return m, nil
		}
	}
	return "", nil
}

// receiptMarks are the members' cursor raises of acks or reads; large
// groups keep none.
func receiptMarks(user string, acks []redisstore.AckItem, access map[string]redisstore.ConvAccess) []redisstore.ReceiptMark {
	marks := make([]redisstore.ReceiptMark, 0, len(acks))
	for _, a := range acks {
		if !access[a.Conv].Large {
			marks = append(marks, redisstore.ReceiptMark{Conv: a.Conv, Epoch: a.Epoch, Member: user, Seq: a.Seq})
		}
	}
	return marks
}

// afterAcks tells this node's connection of the device, if it has one, to
// stop pushing what was acked, and hands the raised cursors to the
// receipt events (with the senders the connection knows from its pushes).
func (s *Server) afterAcks(user, dev string, acks []redisstore.AckItem, raised []redisstore.RaisedReceipt) {
	senders := s.ackedOnConn(user, dev, acks)
	for _, r := range raised {
		if r.Raised {
			s.live.receipts.add(r.Conv, r.Epoch, user, r.Prev, r.Seq, senders[r.Conv])
		}
	}
}

// ackedOnConn tells this node's connection of the device, if it has one,
// to stop pushing what was acked, and returns the senders of those pushes
// (conv → sender → their newest seq; nil without a connection here).
func (s *Server) ackedOnConn(user, dev string, acks []redisstore.AckItem) map[string]map[string]uint64 {
	c := s.live.connOf(user, dev)
	if c == nil {
		return nil
	}
	return c.acknowledgedAll(acks)
}

// afterReads raises the reader's read (and delivered) cursors.
func (s *Server) afterReads(ctx context.Context, user string, items []seqItem, access map[string]redisstore.ConvAccess) error {
	acks := make([]redisstore.AckItem, len(items))
	for i, it := range items {
		acks[i] = redisstore.AckItem{Conv: it.Conv, Seq: it.Seq, Epoch: access[it.Conv].Epoch}
	}
	raised, err := s.router.Main().RaiseReceipts(ctx, redisstore.ReceiptRead, receiptMarks(user, acks, access))
	if err != nil {
		return err
	}
	for _, r := range raised {
		if r.Raised {
			s.live.receipts.add(r.Conv, r.Epoch, user, r.Prev, r.Seq, nil)
		}
	}
	return nil
}

// peerCursors reads the peer's cursors of the direct conversations among
// convs (type per conversation).
func (s *Server) peerCursors(ctx context.Context, user string, types map[string]schemas.ConvType) (map[string]redisstore.MemberReceipts, error) {
	var direct []string
	for conv, t := range types {
		if t == schemas.ConvType_CONV_TYPE_DIRECT {
			direct = append(direct, conv)
		}
	}
	return s.router.Main().PeerReceipts(ctx, user, direct)
}

// addPeerReceipts fills the peer cursors of list, the JSON of items.
func (s *Server) addPeerReceipts(ctx context.Context, user string, items []readpath.ConvItem, list []conversationJSON) error {
	types := make(map[string]schemas.ConvType, len(items))
	for _, it := range items {
		types[it.Conv] = it.Type
	}
	peers, err := s.peerCursors(ctx, user, types)
	if err != nil {
		return err
	}
	for i := range list {
		if p, ok := peers[list[i].ConvID]; ok {
			d, r := p.Delivered, p.Read
			list[i].PeerDeliveredSeq, list[i].PeerReadSeq = &d, &r
		}
	}
	return nil
}
