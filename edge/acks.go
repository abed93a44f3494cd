package edge

import (
	"context"
	"time"

	"github.com/offlinebox/offlinebox/redisstore"
	"github.com/offlinebox/offlinebox/wire"
)

// Acker applies one device's acks. POST /v1/ack and an ack frame on the
// live channel both come here, so that their effect is the same: the
// device's cursors rise, the members' delivered receipts rise, and the
// live channel stops re-pushing what was acked (Acked).
type Acker struct {
	Router *redisstore.InboxRouter
	// Clock stamps the device's last use (time.Now when nil).
	Clock func() time.Time
	// Acked, when set, is told of every ack applied and the receipts it
	// raised: the live channel's connection of the device, if this node
	// holds one, stops re-pushing, and the raised cursors become receipt
	// events for the senders.
	Acked func(user, dev string, acks []redisstore.AckItem, raised []redisstore.RaisedReceipt)
}

func (a *Acker) nowMS() int64 {
	if a.Clock == nil {
		return time.Now().UnixMilli()
	}
	return a.Clock().UnixMilli()
}

// Apply checks and records one device's acks. access, when not nil, is
// what the caller already knows of the conversations (checked by Check,
// or known from what a live connection was pushed); otherwise the check
// rides on the raise of the members' cursors, and only when that refuses
// are they read and checked in full.
func (a *Acker) Apply(ctx context.Context, user, dev string, items []SeqItem, access map[string]redisstore.ConvAccess) (wire.AckResponse, error) {
	if access == nil {
		if out, done, err := a.applyChecked(ctx, user, dev, items); done || err != nil {
			return out, err
		}
		// Refused by the quick check: the full one below names the item
		// at fault (or, for a former member, admits it).
		var err error
		if access, err = a.Check(ctx, user, items); err != nil {
			return wire.AckResponse{}, err
		}
	}
	acks := AckItems(items, access)
	res, raised, err := a.Router.AckAndRaise(ctx, user, dev, acks, a.nowMS(), ReceiptMarks(user, acks, access))
	if err != nil {
		return wire.AckResponse{}, err
	}
	a.acked(user, dev, acks, raised)
	return AckAnswer(dev, len(acks), res), nil
}

// DeviceAck records the device's cursors alone, for a caller that raises
// the members' cursors itself (the live channel batches them).
func (a *Acker) DeviceAck(ctx context.Context, user, dev string, acks []redisstore.AckItem) (redisstore.AckResult, error) {
	return a.Router.AckDevice(ctx, user, dev, acks, a.nowMS())
}

func (a *Acker) acked(user, dev string, acks []redisstore.AckItem, raised []redisstore.RaisedReceipt) {
	if a.Acked != nil {
		a.Acked(user, dev, acks, raised)
	}
}

// applyChecked records one device's acks with the check riding on the
// raise of the members' delivered cursors (redisstore.RaiseAckedReceipts),
// then raises the device's cursors. done is false, nothing changed, when
// that check refused or could not run in one call; the caller then checks
// in full. An error after the raise leaves the raised receipts: the ack's
// retry raises them again, which changes nothing.
func (a *Acker) applyChecked(ctx context.Context, user, dev string, items []SeqItem) (wire.AckResponse, bool, error) {
	acks := make([]redisstore.AckItem, len(items))
	for i, it := range items {
		acks[i] = redisstore.AckItem{Conv: it.Conv, Seq: it.Seq, Epoch: it.Epoch}
	}
	convs, raised, done, err := a.Router.Main().RaiseAckedReceipts(ctx, user, acks)
	if err != nil || !done {
		return wire.AckResponse{}, false, err
	}
	for i := range acks {
		acks[i].Epoch = convs[acks[i].Conv].Epoch
	}
	res, err := a.Router.AckDevice(ctx, user, dev, acks, a.nowMS())
	if err != nil {
		return wire.AckResponse{}, false, err
	}
	a.acked(user, dev, acks, raised)
	return AckAnswer(dev, len(acks), res), true, nil
}

// Check refuses the whole batch unless the user is a member of every
// conversation and every seq exists there. The access it returns holds
// what those checks read (redisstore.ConversationBounds): a member's
// current span, not their earlier ones.
func (a *Acker) Check(ctx context.Context, user string, items []SeqItem) (map[string]redisstore.ConvAccess, error) {
	convs := make([]string, 0, len(items))
	for _, it := range items {
		convs = append(convs, it.Conv)
	}
	access, err := a.Router.Main().ConversationBounds(ctx, user, convs)
	if err != nil {
		return nil, err
	}
	for _, it := range items {
		ca := access[it.Conv]
		switch {
		case !ca.Member && !ca.Left:
			return nil, Forbidden("not a member of conversation %q", it.Conv)
		case it.Epoch != 0 && it.Epoch != ca.Epoch:
			return nil, EpochMismatch(it.Field+".epoch", it.Epoch, ca.Epoch)
		case it.Seq > ca.Seq:
			return nil, BadRequest(it.Field+".seq", "%d is beyond the conversation's max seq %d", it.Seq, ca.Seq)
		case ca.Left && it.Seq > ca.LastReadable():
			return nil, BadRequest(it.Field+".seq", "%d is beyond seq %d, the last before you left", it.Seq, ca.LastReadable())
		}
	}
	return access, nil
}

// AckItems are checked items as the store takes them, in the epochs
// access holds.
func AckItems(items []SeqItem, access map[string]redisstore.ConvAccess) []redisstore.AckItem {
	acks := make([]redisstore.AckItem, len(items))
	for i, it := range items {
		acks[i] = redisstore.AckItem{Conv: it.Conv, Seq: it.Seq, Epoch: access[it.Conv].Epoch}
	}
	return acks
}

// ReceiptMarks are the members' cursor raises of acks or reads; large
// groups keep none.
func ReceiptMarks(user string, acks []redisstore.AckItem, access map[string]redisstore.ConvAccess) []redisstore.ReceiptMark {
	marks := make([]redisstore.ReceiptMark, 0, len(acks))
	for _, a := range acks {
		if !access[a.Conv].Large {
			marks = append(marks, redisstore.ReceiptMark{Conv: a.Conv, Epoch: a.Epoch, Member: user, Seq: a.Seq})
		}
	}
	return marks
}

// AckAnswer is the answer to n acks of dev (evicted_devices a list, empty
// when none).
func AckAnswer(dev string, n int, res redisstore.AckResult) wire.AckResponse {
	if res.Evicted == nil {
		res.Evicted = []string{}
	}
	return wire.AckResponse{DeviceID: dev, Acked: n, Resync: res.WasEvicted, EvictedDevices: res.Evicted}
}
