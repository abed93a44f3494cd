package api

import (
	"context"
	"net/http"

	"github.com/offlinebox/offlinebox/auth"
	"github.com/offlinebox/offlinebox/edge"
	"github.com/offlinebox/offlinebox/redisstore"
	"github.com/offlinebox/offlinebox/redisstore/readpath"
	"github.com/offlinebox/offlinebox/schemas"
)

// Message states as a sender is shown them (edge.StateOf).
const (
	StateStored    = edge.StateStored
	StatePushed    = edge.StatePushed
	StateDelivered = edge.StateDelivered
	StateRead      = edge.StateRead
)

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
	access, err := s.acker.Check(r.Context(), id.User, items)
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
	out.State = edge.StateOf(n)
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
	return edge.PeerOf(ctx, s.router.Main(), conv, user)
}

// afterReads raises the reader's read (and delivered) cursors.
func (s *Server) afterReads(ctx context.Context, user string, items []seqItem, access map[string]redisstore.ConvAccess) error {
	acks := make([]redisstore.AckItem, len(items))
	for i, it := range items {
		acks[i] = redisstore.AckItem{Conv: it.Conv, Seq: it.Seq, Epoch: access[it.Conv].Epoch}
	}
	raised, err := s.router.Main().RaiseReceipts(ctx, redisstore.ReceiptRead, edge.ReceiptMarks(user, acks, access))
	if err != nil {
		return err
	}
	s.live.Read(user, raised)
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
