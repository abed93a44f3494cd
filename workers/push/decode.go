package push

import (
	"context"
	"errors"

	"github.com/twmb/franz-go/pkg/kgo"
	"google.golang.org/protobuf/proto"

	"github.com/offlinebox/offlinebox/live"
	"github.com/offlinebox/offlinebox/redisstore"
	"github.com/offlinebox/offlinebox/schemas"
)

func (p *Pusher) decode(records []*kgo.Record) []*item {
	var items []*item
	for _, r := range records {
		switch r.Topic {
		case p.cfg.SequencedTopic:
			it, ok := sequencedPush(r.Value)
			if !ok {
				sq, err := schemas.DecodeSequenced(r.Value)
				if err != nil {
					p.metrics.skipped.WithLabelValues("undecodable").Inc()
					continue
				}
				m := sq.GetMessage()
				it = &item{kind: live.KindPush, conv: m.GetConvId(), seq: sq.GetSeq(),
					msgKind: m.GetKind(), sender: m.GetSender(), recipients: m.GetRecipients()}
			}
			it.record = r.Value
			items = append(items, it)
		case p.cfg.MessagesTopic:
			if storedRecord(r.Value) {
				continue // it comes back sequenced
			}
			m, err := schemas.DecodeMessage(r.Value, p.cfg.Limits)
			if err != nil || m.Stored() {
				continue // stored records come back sequenced; invalid ones fanout dead-letters
			}
			items = append(items, &item{kind: live.KindEphemeral, conv: m.GetConvId(), record: r.Value,
				msgKind: m.GetKind(), sender: m.GetSender(), recipients: m.GetRecipients(), exceptUser: m.GetSender()})
		case p.cfg.DeadLetterTopic:
			if it := p.rejectedOf(r); it != nil {
				items = append(items, it)
			}
		}
	}
	return items
}

// rejectedOf tells the sender of a refused message why, in the public
// vocabulary (publicRefusal); a letter of a record that was sequenced is
// nobody's refusal, and is skipped.
func (p *Pusher) rejectedOf(r *kgo.Record) *item {
	var topic, reason, code, seq string
	var hasSeq bool
	for _, h := range r.Headers {
		switch h.Key {
		case schemas.HeaderDeadTopic:
			topic = string(h.Value)
		case schemas.HeaderDeadReason:
			reason = string(h.Value)
		case schemas.HeaderDeadCode:
			code = string(h.Value)
		case schemas.HeaderDeadSeq:
			seq, hasSeq = string(h.Value), true
		}
	}
	if topic != p.cfg.MessagesTopic {
		return nil
	}
	code, ok := publicRefusal(reason, code, seq, hasSeq)
	if !ok {
		p.metrics.skipped.WithLabelValues("sequenced").Inc()
		return nil
	}
	// A dead letter may break any limit (that may be why it is one): it
	// is read as it is, only its sender and ids checked.
	var m schemas.Message
	if err := proto.Unmarshal(r.Value, &m); err != nil || schemas.ValidID("sender", m.GetSender()) != nil {
		return nil // nobody to tell
	}
	return &item{kind: live.KindRejected, conv: m.GetConvId(), sender: m.GetSender(), users: []string{m.GetSender()},
		rejected: &live.Rejected{Conv: m.GetConvId(), ClientMsgID: m.GetClientMsgId(), Code: code,
			Reason: schemas.RefusalSentence(code), AtMS: r.Timestamp.UnixMilli()}}
}

// publicRefusal is the code a dead letter's sender is told, from its
// headers: ok is false for a record that got a seq (it reached its
// conversation) or a letter that is no refusal. A letter written before
// letters carried a seq and a code is read by its reason's beginning
// (schemas.LegacyRefusal); the reason itself is never told.
func publicRefusal(reason, code, seq string, hasSeq bool) (string, bool) {
	switch {
	case hasSeq && seq != "0", hasSeq && code == "":
		return "", false
	case code != "":
		return schemas.PublicRefusal(code), true
	}
	code, sequenced := schemas.LegacyRefusal(reason)
	return code, !sequenced
}

// keepRejections stores the round's refusals in their senders' lists
// before any is pushed (store first, as for messages): a sender offline
// now reads them on its next pull.
func (p *Pusher) keepRejections(ctx context.Context, items []*item) error {
	var rs []redisstore.Rejection
	for _, it := range items {
		if it.kind == live.KindRejected {
			rj := it.rejected
			rs = append(rs, redisstore.Rejection{Sender: it.sender, Conv: rj.Conv, ClientMsgID: rj.ClientMsgID,
				Code: rj.Code, Reason: rj.Reason, AtMS: rj.AtMS})
		}
	}
	if len(rs) == 0 {
		return nil
	}
	added, err := p.store.AddRejections(ctx, rs, p.cfg.Clock())
	p.metrics.rejectionsKept.Add(float64(added))
	var failed redisstore.ItemErrors
	if errors.As(err, &failed) {
		// Those senders' lists can never be written; they are still told
		// live, and the others' were kept.
		for i, ferr := range failed {
			p.cfg.Logger.Warn("push: a refusal cannot be kept for its sender; it is only pushed", "sender", rs[i].Sender,
				"conv", rs[i].Conv, "client_msg_id", rs[i].ClientMsgID, "err", ferr)
		}
		p.metrics.rejectionsNotKept.Add(float64(len(failed)))
		return nil
	}
	return err
}
