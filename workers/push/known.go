package push

import (
	"context"

	"github.com/offlinebox/offlinebox/live"
	"github.com/offlinebox/offlinebox/redisstore"
	"github.com/offlinebox/offlinebox/schemas"
)

// publishKnown publishes on its channel each conversation's records that
// all go there as the stage last resolved the conversation: seen at a
// membership version, every member told (or a large group), and no record
// in the round that needs more than the channel (a leave, whose receipts
// are forgotten first; a large group's join, whose joiners are named).
// Each conversation's batch is published only while the conversation is
// still at that version (the check and the publish are one step), so
// reading the audience costs no round trip of its own. It returns the
// items left to resolve: of the other conversations, and of those that
// changed since.
func (p *Pusher) publishKnown(ctx context.Context, items []*item) ([]*item, error) {
	byConv := map[string][]*item{}
	var convs []string
	var rest []*item
	for _, it := range items {
		if it.kind == live.KindRejected {
			rest = append(rest, it)
			continue
		}
		if byConv[it.conv] == nil {
			convs = append(convs, it.conv)
		}
		byConv[it.conv] = append(byConv[it.conv], it)
	}
	now := p.cfg.Clock()
	var batches []live.ChannelBatch
	var batched [][]*item
	p.mu.Lock()
	for _, c := range convs {
		its := byConv[c]
		e, ok := p.members[c]
		if !ok || e.version == 0 || (!e.large && len(e.untold) > 0) || !channelOnly(its, e) {
			rest = append(rest, its...)
			continue
		}
		var b live.Batch
		for _, it := range its {
			b.Envelopes = append(b.Envelopes, live.Envelope{Kind: it.kind, Conv: c, Large: e.large, Record: it.record, SentMS: now.UnixMilli()})
		}
		batches = append(batches, live.ChannelBatch{Conv: c,
			Audience: redisstore.PushAudience{Large: e.large, Version: e.version}, Batch: b})
		batched = append(batched, its)
	}
	p.mu.Unlock()
	if len(batches) == 0 {
		return rest, nil
	}
	sent, err := p.bus.PublishUnchanged(ctx, p.store.Keys(), batches)
	if err := p.storeRefused(err, func(i int) []*item { return batched[i] }); err != nil {
		return nil, err
	}
	for i, b := range batches {
		if batched[i][0].dropped {
			continue
		}
		if !sent[i] {
			p.metrics.changed.Inc()
			rest = append(rest, batched[i]...)
			continue
		}
		channel := "conv"
		if b.Audience.Large {
			channel = "group"
		}
		p.metrics.publishes.WithLabelValues(channel).Inc()
		for _, it := range batched[i] {
			p.metrics.pushes.WithLabelValues(it.kind).Inc()
		}
	}
	return rest, nil
}

// channelOnly reports whether the items of a conversation resolved
// already as e need nothing but its channel. A QoS 0 record of a sender
// the cache does not know as a member is left to resolve: the membership
// may have changed since (and if not, it is skipped there).
func channelOnly(items []*item, e memberEntry) bool {
	for _, it := range items {
		switch {
		case it.kind == live.KindPush && it.msgKind == schemas.Kind_KIND_MEMBER_LEAVE:
			return false
		case e.large && it.msgKind == schemas.Kind_KIND_MEMBER_JOIN:
			return false
		case it.kind == live.KindEphemeral && !e.large:
			if _, member := e.members[it.sender]; !member {
				return false
			}
		}
	}
	return true
}
