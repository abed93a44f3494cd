package redisstore

import (
	"cmp"
	"slices"
	"strings"

	"github.com/offlinebox/offlinebox/schemas"
)

// planner collects the events of one merge batch per recipient. A batch
// of a small group writes to every member, so what is per member is kept
// in slices indexed once per batch, not looked up per record.
type planner struct {
	mem    map[string]uint64 // member → member seq, as far as known
	large  bool
	index  map[string]int // user → its place in users and events
	users  []string
	events [][]InboxEvent
	// members are mem's users with their index and member seq, for the
	// records every member receives.
	members []plannedMember
	perUser int // room for events made per user at once
}

type plannedMember struct {
	at   int
	user string
	seq  uint64
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
	p := &planner{large: res.LargeFrom > 0, perUser: len(res.Items)}
	switch {
	case !p.large:
		p.mem = res.Members
	case all != nil:
		p.mem = all
	default:
		p.mem = res.MemberSeqs
	}
	p.index = make(map[string]int, len(p.mem))
	if !p.large || all != nil {
		p.members = make([]plannedMember, 0, len(p.mem))
		for u, j := range p.mem {
			p.members = append(p.members, plannedMember{at: p.slot(u), user: u, seq: j})
		}
	}
	if all != nil {
		for _, m := range p.members {
			p.addAt(m.at, InboxConvertLarge, 0, 0)
		}
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
	order := make([]int, 0, len(p.users))
	for i := range p.users {
		if len(p.events[i]) > 0 {
			order = append(order, i)
		}
	}
	slices.SortFunc(order, func(a, b int) int { return strings.Compare(p.users[a], p.users[b]) })
	out := make([]InboxUpdate, len(order))
	for k, i := range order {
		out[k] = InboxUpdate{User: p.users[i], Conv: conv, Form: form, Epoch: res.Epoch, Events: ordered(p.events[i])}
	}
	return out
}

// ordered sorts events by seq (a conversion, seq 0, first) and drops exact
// repeats: a resend in the batch answers with an older seq, and the inbox
// script's guards expect ascending seqs.
func ordered(evs []InboxEvent) []InboxEvent {
	bySeq := func(a, b InboxEvent) int { return cmp.Compare(a.Seq, b.Seq) }
	if !slices.IsSortedFunc(evs, bySeq) {
		slices.SortStableFunc(evs, bySeq)
	}
	return slices.Compact(evs)
}

// slot is user's index in p.users and p.events, made on first use; the
// events of a user get room for one per record of the batch at once.
func (p *planner) slot(user string) int {
	i, ok := p.index[user]
	if !ok {
		i = len(p.users)
		p.index[user] = i
		p.users = append(p.users, user)
		p.events = append(p.events, nil)
	}
	return i
}

func (p *planner) add(user string, k InboxEventKind, seq uint64, ms int64) {
	p.addAt(p.slot(user), k, seq, ms)
}

func (p *planner) addAt(i int, k InboxEventKind, seq uint64, ms int64) {
	if p.events[i] == nil {
		p.events[i] = make([]InboxEvent, 0, max(p.perUser, 1))
	}
	p.events[i] = append(p.events[i], InboxEvent{Kind: k, Seq: seq, WriteMS: ms})
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
	all := m.GetMentionAll() && m.GetKind() == schemas.Kind_KIND_MESSAGE
	for _, mb := range p.members {
		if mb.seq >= s {
			continue
		}
		switch u := mb.user; {
		case u == m.GetSender():
			p.addAt(mb.at, InboxOwn, s, ms)
		case all, named[u]:
			p.addAt(mb.at, InboxMentioned, s, ms)
		case !p.large:
			// A large group's unread is derived from its seq: a delivery
			// needs no write.
			p.addAt(mb.at, InboxDelivered, s, ms)
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
