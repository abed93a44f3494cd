package api

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/offlinebox/offlinebox/auth"
	"github.com/offlinebox/offlinebox/edge"
	"github.com/offlinebox/offlinebox/redisstore"
	"github.com/offlinebox/offlinebox/wire"
)

// ackRequest is the body of POST /v1/ack: what one device stored.
type ackRequest struct {
	DeviceID string            `json:"device_id"`
	Acks     []json.RawMessage `json:"acks"`
}

// seqItemJSON is one item of an ack or read batch.
type seqItemJSON = wire.AckItem

type ackResponse = wire.AckResponse

// seqItem is a (conversation, seq, epoch) of a batch request, checked
// against the conversation before anything is written.
type seqItem = edge.SeqItem

// parseSeqItems decodes a batch of (conv_id, seq[, epoch]) objects.
func (s *Server) parseSeqItems(raws []json.RawMessage, field string) ([]seqItem, error) {
	if len(raws) > s.cfg.MaxCursors { // refused before anything is decoded
		return nil, badRequest(field, "holds %d items, more than %d", len(raws), s.cfg.MaxCursors)
	}
	decoded := make([]seqItemJSON, len(raws))
	for i, raw := range raws {
		if err := decodeJSON(raw, &decoded[i], fmt.Sprintf("%s[%d]", field, i)); err != nil {
			return nil, err
		}
	}
	return s.checkedSeqItems(decoded, field)
}

// checkedSeqItems checks decoded (conv_id, seq[, epoch]) objects, at most
// Config.MaxCursors of them.
func (s *Server) checkedSeqItems(decoded []seqItemJSON, field string) ([]seqItem, error) {
	return edge.CheckedSeqItems(decoded, field, s.cfg.MaxCursors)
}

// checkSeqItems refuses the whole batch unless the user is a member of
// every conversation and every seq exists there. The access it returns
// holds what those checks read (redisstore.ConversationBounds): a
// member's current span, not their earlier ones.
func (s *Server) checkSeqItems(ctx context.Context, user string, items []seqItem) (map[string]redisstore.ConvAccess, error) {
	convs := make([]string, 0, len(items))
	for _, it := range items {
		convs = append(convs, it.Conv)
	}
	access, err := s.router.Main().ConversationBounds(ctx, user, convs)
	if err != nil {
		return nil, err
	}
	for _, it := range items {
		a := access[it.Conv]
		switch {
		case !a.Member && !a.Left:
			return nil, forbidden("not a member of conversation %q", it.Conv)
		case it.Epoch != 0 && it.Epoch != a.Epoch:
			return nil, epochMismatch(it.Field+".epoch", it.Epoch, a.Epoch)
		case it.Seq > a.Seq:
			return nil, badRequest(it.Field+".seq", "%d is beyond the conversation's max seq %d", it.Seq, a.Seq)
		case a.Left && it.Seq > a.LastReadable():
			return nil, badRequest(it.Field+".seq", "%d is beyond seq %d, the last before you left", it.Seq, a.LastReadable())
		}
	}
	return access, nil
}

// ack answers POST /v1/ack: it raises this device's cursors only.
func (s *Server) ack(r *http.Request, id auth.Identity) (int, any, error) {
	data, aerr := readBody(r)
	if aerr != nil {
		return 0, nil, aerr
	}
	named, decoded, fast := parseAckBody(data)
	var body ackRequest
	if !fast {
		if err := decodeJSON(data, &body, ""); err != nil {
			return 0, nil, err
		}
		named = body.DeviceID
	}
	dev, err := deviceOf(id, named, "device_id", true)
	if err != nil {
		return 0, nil, err
	}
	var items []seqItem
	if fast {
		items, err = s.checkedSeqItems(decoded, "acks")
	} else {
		items, err = s.parseSeqItems(body.Acks, "acks")
	}
	if err != nil {
		return 0, nil, err
	}
	out, err := s.applyAcks(r.Context(), id.User, dev, items, nil, false)
	if err != nil {
		return 0, nil, err
	}
	return http.StatusOK, out, nil
}

// applyAcks checks and records one device's acks; POST /v1/ack and an ack
// frame on the live channel both come here, so their effect is the same:
// the device's cursors rise, the members' delivered receipts rise, and
// the live channel stops re-pushing what was acked. access, when not nil,
// is what the caller already knows of the conversations (a live
// connection knows what it pushed); otherwise they are read and checked.
func (s *Server) applyAcks(ctx context.Context, user, dev string, items []seqItem, access map[string]redisstore.ConvAccess, deferRaise bool) (ackResponse, error) {
	if access == nil && !deferRaise {
		if out, done, err := s.applyCheckedAcks(ctx, user, dev, items); done || err != nil {
			return out, err
		}
		// Refused by the quick check: the full one below names the item
		// at fault (or, for a former member, admits it).
	}
	if access == nil {
		var err error
		if access, err = s.checkSeqItems(ctx, user, items); err != nil {
			return ackResponse{}, err
		}
	}
	acks := make([]redisstore.AckItem, len(items))
	for i, it := range items {
		acks[i] = redisstore.AckItem{Conv: it.Conv, Seq: it.Seq, Epoch: access[it.Conv].Epoch}
	}
	marks := receiptMarks(user, acks, access)
	var res redisstore.AckResult
	var raised []redisstore.RaisedReceipt
	var err error
	if deferRaise && s.live.raises.room(len(marks)) {
		// An ack on the socket: the device's cursors now, the members'
		// delivered cursors with the node's next batch of raises.
		if !s.router.HasHot() {
			// Every user's keys are on the main store: the node's acks
			// within a few milliseconds go in one pipeline.
			res, err = s.live.acks.ack(ctx, redisstore.DeviceAck{User: user, Device: dev, Items: acks, NowMS: s.cfg.Clock().UnixMilli()})
		} else {
			res, err = s.router.AckDevice(ctx, user, dev, acks, s.cfg.Clock().UnixMilli())
		}
		if err != nil {
			return ackResponse{}, err
		}
		s.live.raises.add(marks, s.ackedOnConn(user, dev, acks))
		return ackAnswer(dev, len(acks), res), nil
	}
	res, raised, err = s.router.AckAndRaise(ctx, user, dev, acks, s.cfg.Clock().UnixMilli(), marks)
	if err != nil {
		return ackResponse{}, err
	}
	s.afterAcks(user, dev, acks, raised)
	return ackAnswer(dev, len(acks), res), nil
}

// ackAnswer is the answer to n acks of dev (evicted_devices a list, empty
// when none).
func ackAnswer(dev string, n int, res redisstore.AckResult) ackResponse {
	if res.Evicted == nil {
		res.Evicted = []string{}
	}
	return ackResponse{DeviceID: dev, Acked: n, Resync: res.WasEvicted, EvictedDevices: res.Evicted}
}

// applyCheckedAcks records one device's acks with the check riding on the
// raise of the members' delivered cursors (redisstore.RaiseAckedReceipts),
// then raises the device's cursors. done is false, nothing changed, when
// that check refused or could not run in one call; the caller then checks
// in full as before. An error after the raise leaves the raised receipts:
// the ack's retry raises them again, which changes nothing.
func (s *Server) applyCheckedAcks(ctx context.Context, user, dev string, items []seqItem) (ackResponse, bool, error) {
	acks := make([]redisstore.AckItem, len(items))
	for i, it := range items {
		acks[i] = redisstore.AckItem{Conv: it.Conv, Seq: it.Seq, Epoch: it.Epoch}
	}
	convs, raised, done, err := s.router.Main().RaiseAckedReceipts(ctx, user, acks)
	if err != nil || !done {
		return ackResponse{}, false, err
	}
	for i := range acks {
		acks[i].Epoch = convs[acks[i].Conv].Epoch
	}
	res, err := s.router.AckDevice(ctx, user, dev, acks, s.cfg.Clock().UnixMilli())
	if err != nil {
		return ackResponse{}, false, err
	}
	s.afterAcks(user, dev, acks, raised)
	return ackAnswer(dev, len(acks), res), true, nil
}
