package redisstore

import (
	"cmp"
	"slices"

	"github.com/offlinebox/offlinebox/schemas"
)

// planner collects the events of one merge batch per recipient.
type planner struct {
	mem    map[string]uint64 // member → member seq, as far as known
	large  bool
	events map[string][]InboxEvent
}

// PlanInbox turns the sequenced merge batch res of conv into one inbox
// update per user whose inbox it touches, sorted by user. all is every
// member, read (Members) only while a group that just became large is
// converted (res.Members is nil once a group is large); otherwise nil. A record of seq s reaches the
// members m with mem[m] < s (see schemas/redis-keys.md, Membership).
//
// Small conversations: every recipient gets a delivery (a mention when
// named or @all), the sender an own-message event, a joiner its join.
// Large groups: only the sender (its read seq), explicitly mentioned
// members, joiners and leavers are written; @all is one reference the
// sequencing script keeps on the conversation. When the group became large
// and its members are not converted yet, every member gets a conversion
// event, and records before the switch still mention per member.
func PlanInbox(conv string, res *SequenceResult, all map[string]uint64) []InboxUpdate {
	p := &planner{large: res.LargeFrom > 0, events: map[string][]InboxEvent{}}
	switch {
	case !p.large:
		p.mem = res.Members
	case all != nil:
		p.mem = all
		for u := range all {
			p.add(u, InboxConvertLarge, 0, 0)
		}
	default:
		p.mem = res.MemberSeqs
	}
	form := InboxGroup
	for _, it := range res.Items {
		sq := it.Sequenced
		if it.Status == SeqRejected || sq == nil {
			continue
		}
		if sq.GetMessage().GetConvType() == schemas.ConvType_CONV_TYPE_DIRECT {
			form = InboxDirect
		}
		if !p.large || (all != nil && sq.GetSeq() < res.LargeFrom) {
			p.everyMember(sq)
		} else {
			p.named(sq)
		}
	}
	if p.large {
		form = InboxLarge
	}
	users := make([]string, 0, len(p.events))
	for u := range p.events {
		users = append(users, u)
	}
	slices.Sort(users)
	out := make([]InboxUpdate, len(users))
	for i, u := range users {
		out[i] = InboxUpdate{User: u, Conv: conv, Form: form, Epoch: res.Epoch, Events: ordered(p.events[u])}
	}
	return out
}

// ordered sorts events by seq (a conversion, seq 0, first) and drops exact
// repeats: a resend in the batch answers with an older seq, and the inbox
// script's guards expect ascending seqs.
func ordered(evs []InboxEvent) []InboxEvent {
	slices.SortStableFunc(evs, func(a, b InboxEvent) int {
		return cmp.Compare(a.Seq, b.Seq)
	})
	return slices.Compact(evs)
}

func (p *planner) add(user string, k InboxEventKind, seq uint64, ms int64) {
	p.events[user] = append(p.events[user], InboxEvent{Kind: k, Seq: seq, WriteMS: ms})
}

// memberAt reports whether user receives the record of seq s.
func (p *planner) memberAt(user string, s uint64) bool {
	j, ok := p.mem[user]
	return ok && j < s
}

// joined lists the users whose membership starts with the record.
func (p *planner) joined(m *schemas.Message, s uint64) []string {
	if m.GetKind() != schemas.Kind_KIND_MEMBER_JOIN {
		return nil
	}
	var out []string
	for _, u := range m.GetRecipients() {
		if j, ok := p.mem[u]; ok && j == s {
			out = append(out, u)
		}
	}
	return out
}

// everyMember plans a record that reaches every member's inbox.
func (p *planner) everyMember(sq *schemas.Sequenced) {
	m, s, ms := sq.GetMessage(), sq.GetSeq(), sq.GetWriteTimeMs()
	named := mentioned(m)
	for u, j := range p.mem {
		if j >= s {
			continue
		}
		switch {
		case u == m.GetSender():
			p.add(u, InboxOwn, s, ms)
		case m.GetMentionAll() && m.GetKind() == schemas.Kind_KIND_MESSAGE, named[u]:
			p.add(u, InboxMentioned, s, ms)
		case !p.large:
			// A large group's unread is derived from its seq: a delivery
			// needs no write.
			p.add(u, InboxDelivered, s, ms)
		}
	}
	for _, u := range p.joined(m, s) {
		p.add(u, InboxJoined, s, ms)
	}
}

// named plans a large-group record: only the users it names are written.
func (p *planner) named(sq *schemas.Sequenced) {
	m, s, ms := sq.GetMessage(), sq.GetSeq(), sq.GetWriteTimeMs()
	if p.memberAt(m.GetSender(), s) {
		p.add(m.GetSender(), InboxOwn, s, ms)
	}
	for u := range mentioned(m) {
		if u != m.GetSender() && p.memberAt(u, s) {
			p.add(u, InboxMentioned, s, ms)
		}
	}
	for _, u := range p.joined(m, s) {
		p.add(u, InboxJoined, s, ms)
	}
	if m.GetKind() == schemas.Kind_KIND_MEMBER_LEAVE {
		for _, u := range m.GetRecipients() {
			p.add(u, InboxLeftLarge, s, ms)
		}
	}
}

// mentioned is the set of users a message names (not @all).
func mentioned(m *schemas.Message) map[string]bool {
	if m.GetKind() != schemas.Kind_KIND_MESSAGE || len(m.GetMentions()) == 0 {
		return nil
	}
	out := make(map[string]bool, len(m.GetMentions()))
	for _, u := range m.GetMentions() {
		out[u] = true
	}
	return out
}

// ProbeUsers are the users whose membership PlanInbox needs of a large
// group's batch: senders, mentioned users, joiners and leavers. They are
// the probe users to pass to Sequence.
func ProbeUsers(msgs []*schemas.Message) []string {
	seen := map[string]bool{}
	var out []string
	add := func(u string) {
		if !seen[u] {
			seen[u] = true
			out = append(out, u)
		}
	}
	for _, m := range msgs {
		add(m.GetSender())
		for _, u := range m.GetMentions() {
			add(u)
		}
		if m.GetKind() != schemas.Kind_KIND_MESSAGE {
			for _, u := range m.GetRecipients() {
				add(u)
			}
		}
	}
	return out
}
