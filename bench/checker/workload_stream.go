package checker

import (
	"fmt"
	"slices"

	"google.golang.org/protobuf/proto"

	"github.com/offlinebox/offlinebox/schemas"
)

// stream builds the records produced while devices run: messages in
// direct, small and large conversations with mentions, resends of earlier
// client_msg_ids, QoS 0 records, joins and leaves, and poison records in
// the middle.
func (g *gen) stream() {
	joins, leaves := spread(g.rng.Perm(g.cfg.Messages), g.cfg.Joins), spread(g.rng.Perm(g.cfg.Messages), g.cfg.Leaves)
	var resends []pendingResend
	for i := range g.cfg.Messages {
		if joins[i] {
			g.join()
		}
		if leaves[i] {
			g.leave()
		}
		if g.cfg.Poison > 0 && i == g.cfg.Messages/2 {
			g.poison()
		}
		m := g.message()
		g.w.Stream = append(g.w.Stream, Item{Msg: m})
		if m.GetQos() != schemas.QoS_QOS_AT_MOST_ONCE && g.rng.IntN(100) < g.cfg.ResendPercent {
			resends = append(resends, pendingResend{at: i + g.rng.IntN(40), msg: m})
		}
		resends = g.flushResends(resends, i)
	}
	g.flushResends(resends, g.cfg.Messages+1<<30)
}

type pendingResend struct {
	at  int
	msg *schemas.Message
}

// flushResends appends the resends due by position i and keeps the rest.
func (g *gen) flushResends(rs []pendingResend, i int) []pendingResend {
	keep := rs[:0]
	for _, r := range rs {
		if r.at <= i {
			g.w.Stream = append(g.w.Stream, Item{Msg: proto.Clone(r.msg).(*schemas.Message), Resend: true})
			continue
		}
		keep = append(keep, r)
	}
	return keep
}

// spread marks n positions of perm.
func spread(perm []int, n int) map[int]bool {
	out := map[int]bool{}
	for _, p := range perm[:min(n, len(perm))] {
		out[p] = true
	}
	return out
}

// message is one message of a random conversation: 30% direct, the rest
// groups (a tenth of those in the large group, when there is one).
func (g *gen) message() *schemas.Message {
	m := &schemas.Message{ClientMsgId: g.id(), Kind: schemas.Kind_KIND_MESSAGE, ContentType: "text/plain",
		Body: g.body(), SendTimeMs: 1}
	switch r := g.rng.IntN(100); {
	case r < 30:
		i := g.rng.IntN(len(g.directs))
		p := g.directs[i]
		if g.rng.IntN(2) == 1 {
			p[0], p[1] = p[1], p[0]
		}
		m.ConvId, m.ConvType, m.Sender, m.Recipients = g.directID(i), schemas.ConvType_CONV_TYPE_DIRECT, p[0], []string{p[1]}
	case r < 37 && g.large != "":
		g.groupMessage(m, g.large)
	default:
		g.groupMessage(m, g.groups[g.rng.IntN(len(g.groups))])
	}
	if g.rng.IntN(100) < g.cfg.QoS0Percent {
		m.Qos, m.Body = schemas.QoS_QOS_AT_MOST_ONCE, nil
		m.ContentType = "typing"
	} else if g.rng.IntN(2) == 0 {
		m.Qos = schemas.QoS_QOS_AT_LEAST_ONCE
	}
	return m
}

func (g *gen) groupMessage(m *schemas.Message, conv string) {
	mem := g.members[conv]
	if conv == g.large {
		// Only the users with devices write in the large group.
		mem = mem[:min(len(mem), 12)]
	}
	m.ConvId, m.ConvType, m.Sender = conv, schemas.ConvType_CONV_TYPE_GROUP, mem[g.rng.IntN(len(mem))]
	if g.rng.IntN(100) >= g.cfg.MentionPercent {
		return
	}
	if g.rng.IntN(10) == 0 {
		m.MentionAll = true
		return
	}
	if u := mem[g.rng.IntN(len(mem))]; u != m.Sender {
		m.Mentions = []string{u}
	}
}

// join adds a user with devices to a small group they are not in.
func (g *gen) join() {
	conv := g.groups[g.rng.IntN(len(g.groups))]
	var out []string
	for _, u := range g.users {
		if !slices.Contains(g.members[conv], u) {
			out = append(out, u)
		}
	}
	if len(out) == 0 {
		return
	}
	u := out[g.rng.IntN(len(out))]
	g.members[conv] = append(g.members[conv], u)
	g.w.Stream = append(g.w.Stream, Item{Msg: &schemas.Message{ClientMsgId: g.id(), ConvId: conv,
		ConvType: schemas.ConvType_CONV_TYPE_GROUP, Kind: schemas.Kind_KIND_MEMBER_JOIN,
		Sender: g.founder[conv], Recipients: []string{u}}})
}

// leave removes a member other than the founder from a small group that
// keeps at least three members.
func (g *gen) leave() {
	conv := g.groups[g.rng.IntN(len(g.groups))]
	mem := g.members[conv]
	if len(mem) <= 3 {
		return
	}
	i := 1 + g.rng.IntN(len(mem)-1)
	u := mem[i]
	g.members[conv] = slices.Delete(slices.Clone(mem), i, i+1)
	g.w.Stream = append(g.w.Stream, Item{Msg: &schemas.Message{ClientMsgId: g.id(), ConvId: conv,
		ConvType: schemas.ConvType_CONV_TYPE_GROUP, Kind: schemas.Kind_KIND_MEMBER_LEAVE,
		Sender: u, Recipients: []string{u}}})
}

// poison puts records no consumer can use in the partitions of real
// conversations: bytes that are no protobuf, a protobuf Message without a
// conversation type, a message over the mentions limit, and records the
// group's authority refuses (a stranger's message, a member removing the
// founder).
func (g *gen) poison() {
	g.refused()
	for i := range g.cfg.Poison {
		conv := g.w.Convs[g.rng.IntN(len(g.w.Convs))]
		raw := []byte{0xff, 0xff, 0xff, 0xff, 0x0f, byte(i), 0x01}
		switch i % 3 {
		case 1:
			raw, _ = proto.Marshal(&schemas.Message{ClientMsgId: g.id(), ConvId: conv, Sender: "x"})
		case 2:
			many := make([]string, schemas.DefaultMaxMentions+1)
			for k := range many {
				many[k] = fmt.Sprint("m", k)
			}
			raw, _ = proto.Marshal(&schemas.Message{ClientMsgId: g.id(), ConvId: conv, ConvType: schemas.ConvType_CONV_TYPE_GROUP,
				Kind: schemas.Kind_KIND_MESSAGE, Sender: "x", Mentions: many})
		}
		g.w.Stream = append(g.w.Stream, Item{Raw: raw, Key: conv})
	}
}

// apiMessages are what devices send through the API: direct messages of
// their conversations and messages in groups their user founded (members
// for the whole run).
func (g *gen) apiMessages() {
	for range g.cfg.APIMessages {
		m := &schemas.Message{ClientMsgId: g.id(), Kind: schemas.Kind_KIND_MESSAGE, ContentType: "text/plain",
			Body: g.body(), Qos: schemas.QoS_QOS_AT_LEAST_ONCE}
		if g.rng.IntN(2) == 0 {
			i := g.rng.IntN(len(g.directs))
			p := g.directs[i]
			m.ConvId, m.ConvType, m.Sender, m.Recipients = g.directID(i), schemas.ConvType_CONV_TYPE_DIRECT, p[0], []string{p[1]}
		} else {
			conv := g.groups[g.rng.IntN(len(g.groups))]
			m.ConvId, m.ConvType, m.Sender = conv, schemas.ConvType_CONV_TYPE_GROUP, g.founder[conv]
		}
		g.w.API[m.Sender] = append(g.w.API[m.Sender], m)
	}
}

// refused adds, to one small group, a message from a user who is not a
// member and a member's attempt to remove the founder: both must be
// dead-lettered and change nothing.
func (g *gen) refused() {
	conv := g.groups[g.rng.IntN(len(g.groups))]
	mem := g.members[conv]
	for _, u := range g.users {
		if !slices.Contains(mem, u) {
			m := &schemas.Message{ClientMsgId: g.id(), ConvId: conv, ConvType: schemas.ConvType_CONV_TYPE_GROUP,
				Kind: schemas.Kind_KIND_MESSAGE, Sender: u, ContentType: "text/plain", Body: g.body()}
			g.w.Stream = append(g.w.Stream, Item{Msg: m})
			break
		}
	}
	if len(mem) > 1 {
		g.w.Stream = append(g.w.Stream, Item{Msg: &schemas.Message{ClientMsgId: g.id(), ConvId: conv,
			ConvType: schemas.ConvType_CONV_TYPE_GROUP, Kind: schemas.Kind_KIND_MEMBER_LEAVE,
			Sender: mem[1], Recipients: []string{g.founder[conv]}}})
	}
}
