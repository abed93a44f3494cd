package main

import (
	"fmt"
	"time"

	"github.com/offlinebox/offlinebox/bench/internal/harness"
	"github.com/offlinebox/offlinebox/schemas"
)

// phase is one kind of message and the records of it, produced once and
// drained by ours and by the baseline in turn.
type phase struct {
	name string
	msgs []*schemas.Message
	// seqs is each conversation's seq after the phase.
	seqs  map[string]int
	timed bool
}

// workload is the DM-heavy mix: 70 % direct messages, 25 % in groups of
// 3 to 50 members, 5 % in groups of 500, each kind a phase of its own so
// that Redis's time per message is each kind's.
type workload struct {
	joins, direct, group, large *phase
}

func newPhase(name string, timed bool) *phase {
	return &phase{name: name, seqs: map[string]int{}, timed: timed}
}

func (p *phase) add(m *schemas.Message) {
	p.msgs = append(p.msgs, m)
	p.seqs[m.GetConvId()]++
}

// makeWorkload builds messages messages of the mix: pairs for the direct
// ones, groups of 3–50 and of 500 founded by joins in a phase of their own.
func makeWorkload(b *harness.Bodies, messages int) *workload {
	w := &workload{joins: newPhase("joins", false), direct: newPhase("direct", true),
		group: newPhase("group", true), large: newPhase("large", true)}
	nd, ng := messages*70/100, messages*25/100
	nl := max(1, messages-nd-ng)
	pairs := max(1, nd/7)
	for range nd {
		pair := b.Intn(pairs)
		from, to := fmt.Sprintf("wd%du0", pair), fmt.Sprintf("wd%du1", pair)
		if b.Intn(2) == 0 {
			from, to = to, from
		}
		w.direct.add(message(b, fmt.Sprintf("wd%d", pair), schemas.ConvType_CONV_TYPE_DIRECT, from, []string{to}))
	}
	small := founded(b, w.joins, "wg", max(1, ng/25), func(int) int { return 3 + b.Intn(48) })
	big := founded(b, w.joins, "wl", max(1, nl/250), func(int) int { return 500 })
	for range ng {
		g := small[b.Intn(len(small))]
		w.group.add(message(b, g[0], schemas.ConvType_CONV_TYPE_GROUP, g[1+b.Intn(len(g)-1)], nil))
	}
	for range nl {
		g := big[b.Intn(len(big))]
		w.large.add(message(b, g[0], schemas.ConvType_CONV_TYPE_GROUP, g[1+b.Intn(len(g)-1)], nil))
	}
	return w
}

// founded makes n groups of size(i) members, their joins added to joins;
// each group is its id followed by its members.
func founded(b *harness.Bodies, joins *phase, tag string, n int, size func(int) int) [][]string {
	var out [][]string
	for g := range n {
		conv := fmt.Sprintf("%s%d", tag, g)
		mem := make([]string, size(g))
		for k := range mem {
			mem[k] = fmt.Sprintf("%s%du%d", tag, g, k)
		}
		for start := 0; start < len(mem); start += schemas.DefaultMaxRecipients {
			joins.add(&schemas.Message{ClientMsgId: fmt.Sprintf("%s-join%d", conv, start), ConvId: conv,
				ConvType: schemas.ConvType_CONV_TYPE_GROUP, Kind: schemas.Kind_KIND_MEMBER_JOIN, Sender: mem[0],
				Recipients: mem[start:min(start+schemas.DefaultMaxRecipients, len(mem))]})
		}
		out = append(out, append([]string{conv}, mem...))
	}
	return out
}

func message(b *harness.Bodies, conv string, typ schemas.ConvType, sender string, to []string) *schemas.Message {
	return &schemas.Message{ClientMsgId: b.UUID(), ConvId: conv, ConvType: typ, Kind: schemas.Kind_KIND_MESSAGE,
		Sender: sender, Recipients: to, ContentType: "text/plain", Body: b.Next(), SendTimeMs: time.Now().UnixMilli()}
}
