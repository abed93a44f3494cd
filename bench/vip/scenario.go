package main

import (
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/offlinebox/offlinebox/bench/internal/harness"
	"github.com/offlinebox/offlinebox/schemas"
)

// The founding scenario at full scale.
const (
	vip            = "vip"
	noisyMembers   = 10000
	noisyMessages  = 28000
	otherGroups    = 29
	otherMessages  = 4000
	directConvs    = 40
	directMessages = 800
	userPool       = 12000
	joinChunk      = 1000
	absence        = 5 * 24 * time.Hour
)

// mentionAt places the VIP's @mentions: (group index, fraction of the
// way through that group's messages). Group 0 is the noisy one; groups 1-3
// are the busiest of the others, so a "newest 200" cut misses them all.
var mentionAt = []struct {
	group int
	at    float64
}{{0, 0.02}, {0, 0.5}, {1, 0.1}, {2, 0.3}, {3, 0.25}}

// scenario is the generated workload.
type scenario struct {
	joins []*schemas.Message
	// msgs are the messages of the 5 days, in the order they are sent.
	msgs []*schemas.Message
	// toVIP maps conversation → client_msg_id of every message the VIP
	// must receive; mentions and direct list the special ones.
	toVIP     map[string]map[string]bool
	mentions  map[string]bool // conv + "/" + client_msg_id
	direct    int
	bodyBytes int64
	groups    []string
	groupSize map[string]int
}

func groupID(i int) string  { return fmt.Sprintf("g%02d", i) }
func userID(i int) string   { return fmt.Sprintf("u%05d", i) }
func directID(i int) string { return fmt.Sprintf("d%02d", i) }
func peerID(i int) string   { return fmt.Sprintf("p%02d", i) }

// otherSizes spreads the other groups' sizes from 20 to 500 members.
func otherSize(i int) int {
	return int(math.Round(20 * math.Pow(25, float64(i)/float64(otherGroups-1))))
}

// buildScenario generates the memberships and the 5 days of messages.
func buildScenario(f *harness.Flags) *scenario {
	b := harness.NewBodies(f.Seed)
	sc := &scenario{toVIP: map[string]map[string]bool{}, mentions: map[string]bool{}, groupSize: map[string]int{}}
	perConv := map[string][]*schemas.Message{}
	members := sc.memberships(b)
	counts := sc.messageCounts(f)
	for gi, g := range sc.groups {
		mem := members[g]
		for range counts[gi] {
			m := newMessage(b, g, schemas.ConvType_CONV_TYPE_GROUP, mem[1+b.Intn(len(mem)-1)])
			if b.Intn(100) == 0 {
				m.Mentions = []string{mem[1+b.Intn(len(mem)-1)]}
			}
			perConv[g] = append(perConv[g], m)
		}
	}
	for _, mt := range mentionAt {
		g := sc.groups[mt.group]
		m := perConv[g][int(mt.at*float64(len(perConv[g])-1))]
		m.Mentions = append(m.Mentions, vip)
		sc.mentions[g+"/"+m.GetClientMsgId()] = true
	}
	perDirect := max(1, f.Scaled(directMessages, directConvs)/directConvs)
	for d := range directConvs {
		conv := directID(d)
		for range perDirect {
			m := newMessage(b, conv, schemas.ConvType_CONV_TYPE_DIRECT, peerID(d))
			m.Recipients = []string{vip}
			perConv[conv] = append(perConv[conv], m)
			sc.direct++
		}
	}
	sc.interleave(b, perConv)
	return sc
}

// memberships creates the groups: the noisy one with noisyMembers members
// joining in chunks, the others drawn from the user pool; the VIP is a
// founder of every group.
func (sc *scenario) memberships(b *harness.Bodies) map[string][]string {
	members := map[string][]string{}
	noisy := []string{vip}
	for i := 1; i < noisyMembers; i++ {
		noisy = append(noisy, userID(i))
	}
	sc.addGroup(members, groupID(0), noisy)
	for gi := 1; gi <= otherGroups; gi++ {
		size := otherSize(gi - 1)
		mem, seen := []string{vip}, map[string]bool{vip: true}
		for len(mem) < size {
			if u := userID(1 + b.Intn(userPool)); !seen[u] {
				seen[u] = true
				mem = append(mem, u)
			}
		}
		sc.addGroup(members, groupID(gi), mem)
	}
	return members
}

func (sc *scenario) addGroup(members map[string][]string, g string, mem []string) {
	members[g] = mem
	sc.groups = append(sc.groups, g)
	sc.groupSize[g] = len(mem)
	for start := 0; start < len(mem); start += joinChunk {
		part := mem[start:min(start+joinChunk, len(mem))]
		sc.joins = append(sc.joins, &schemas.Message{ClientMsgId: fmt.Sprintf("%s-join%d", g, start/joinChunk),
			ConvId: g, ConvType: schemas.ConvType_CONV_TYPE_GROUP, Kind: schemas.Kind_KIND_MEMBER_JOIN,
			Sender: mem[0], Recipients: part}) // the founder (owner) adds the rest
	}
}

// messageCounts gives the noisy group its share and the other groups
// theirs by a Zipf law: a few busy groups (over 200 messages each at full
// scale), many quiet ones.
func (sc *scenario) messageCounts(f *harness.Flags) []int {
	counts := make([]int, len(sc.groups))
	counts[0] = f.Scaled(noisyMessages, 1)
	total := f.Scaled(otherMessages, otherGroups)
	h := 0.0
	for i := 1; i <= otherGroups; i++ {
		h += 1 / float64(i)
	}
	for gi := 1; gi <= otherGroups; gi++ {
		counts[gi] = max(1, int(math.Round(float64(total)/(h*float64(gi)))))
	}
	return counts
}

func newMessage(b *harness.Bodies, conv string, t schemas.ConvType, sender string) *schemas.Message {
	return &schemas.Message{ClientMsgId: b.UUID(), ConvId: conv, ConvType: t,
		Kind: schemas.Kind_KIND_MESSAGE, Sender: sender, ContentType: "text/plain", Body: b.Next(),
		Qos: schemas.QoS_QOS_AT_LEAST_ONCE}
}

// interleave orders all conversations' messages as concurrent traffic:
// at each step the next message of a conversation picked with probability
// proportional to what it has left; send times spread over the absence.
func (sc *scenario) interleave(b *harness.Bodies, perConv map[string][]*schemas.Message) {
	var convs []string
	left := 0
	for c, ms := range perConv {
		convs = append(convs, c)
		left += len(ms)
		sc.toVIP[c] = map[string]bool{}
		for _, m := range ms {
			sc.toVIP[c][m.GetClientMsgId()] = true
			sc.bodyBytes += int64(len(m.GetBody()))
		}
	}
	slices.Sort(convs)
	total := left
	next := map[string]int{}
	start := time.Now().Add(-absence).UnixMilli()
	for left > 0 {
		pick := b.Intn(left)
		for _, c := range convs {
			rest := len(perConv[c]) - next[c]
			if pick < rest {
				m := perConv[c][next[c]]
				m.SendTimeMs = start + int64(len(sc.msgs))*absence.Milliseconds()/int64(total)
				sc.msgs = append(sc.msgs, m)
				next[c]++
				break
			}
			pick -= rest
		}
		left--
	}
}
