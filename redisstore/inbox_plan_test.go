package redisstore

import (
	"fmt"
	"strings"
	"testing"

	"github.com/offlinebox/offlinebox/schemas"
)

// planArgs are PlanInbox's arguments.
type planArgs struct {
	conv string
	res  *SequenceResult
	all  map[string]uint64
}

func planSeqd(seq uint64, m *schemas.Message) SequencedItem {
	return SequencedItem{Status: SeqNew,
		Sequenced: &schemas.Sequenced{Message: m, Seq: seq, WriteTimeMs: int64(1000 + seq)}}
}

// render writes updates as "user:form:events" lines, events as kind+seq.
func renderPlan(ups []InboxUpdate) string {
	var b strings.Builder
	for _, u := range ups {
		fmt.Fprintf(&b, "%s:%c:", u.User, u.Form)
		for _, e := range u.Events {
			fmt.Fprintf(&b, "%c%d ", e.Kind, e.Seq)
		}
		b.WriteString("\n")
	}
	return b.String()
}

func TestPlanInboxWritesWhatEachRecordOwesEachUser(t *testing.T) {
	cases := []struct {
		name string
		in   planArgs
		want string
	}{
		{
			name: "small group: delivery, own, mention; a later joiner sees only what follows its join",
			in: planArgs{conv: "g", res: &SequenceResult{
				Members: map[string]uint64{"a": 0, "b": 0, "c": 3},
				Items: []SequencedItem{
					planSeqd(2, planMsg("g", "1", "a", planMentions("b"))),
					planSeqd(3, planMsg("g", "2", "a", planJoin("c"))),
					planSeqd(4, planMsg("g", "3", "b", planMentionAll)),
				}}},
			want: "a:g:o2 o3 m4 \nb:g:m2 d3 o4 \nc:g:j3 m4 \n",
		},
		{
			name: "direct conversation",
			in: planArgs{conv: "d", res: &SequenceResult{
				Members: map[string]uint64{"a": 0, "b": 0},
				Items:   []SequencedItem{planSeqd(1, planMsg("d", "1", "a", planTo("b")))}}},
			want: "a:d:o1 \nb:d:d1 \n",
		},
		{
			name: "rejected records and expired duplicates write nothing; a resend is not applied twice",
			in: planArgs{conv: "d", res: &SequenceResult{
				Members: map[string]uint64{"a": 0, "b": 0},
				Items: []SequencedItem{
					planSeqd(5, planMsg("d", "1", "a", planTo("b"))),
					{Status: SeqRejected, Reason: fmt.Errorf("no")},
					{Status: SeqDuplicate},
					{Status: SeqDuplicate, Sequenced: planSeqd(5, planMsg("d", "1", "a", planTo("b"))).Sequenced},
					{Status: SeqDuplicate, Sequenced: planSeqd(2, planMsg("d", "0", "b", planTo("a"))).Sequenced},
				}}},
			want: "a:d:d2 o5 \nb:d:o2 d5 \n",
		},
		{
			name: "large group: sender, named members, joiner and leaver only; @all writes nobody",
			in: planArgs{conv: "L", res: &SequenceResult{
				LargeFrom: 1, LargeConverted: true,
				MemberSeqs: map[string]uint64{"a": 0, "b": 0, "j": 9},
				Items: []SequencedItem{
					planSeqd(8, planMsg("L", "1", "a", planMentions("b", "outsider", "a"), planMentionAll)),
					planSeqd(9, planMsg("L", "2", "a", planJoin("j"))),
					planSeqd(10, planMsg("L", "3", "j", planMentions("b"))),
				}}},
			want: "a:L:o8 o9 \nb:L:m8 m10 \nj:L:j9 o10 \n",
		},
		{
			name: "large group: a leave (first of its batch) reaches the leaver only as its leave",
			in: planArgs{conv: "L", res: &SequenceResult{
				LargeFrom: 1, LargeConverted: true,
				MemberSeqs: map[string]uint64{"a": 0},
				Items: []SequencedItem{
					planSeqd(11, planMsg("L", "4", "b", planLeave("b"))),
					planSeqd(12, planMsg("L", "5", "a", planMentions("b"))),
				}}},
			want: "a:L:o12 \nb:L:x11 \n",
		},
		{
			name: "a group that just became large: every member converts, records before the switch mention everyone",
			in: planArgs{conv: "g", all: map[string]uint64{"a": 0, "b": 0, "c": 0, "n": 3},
				res: &SequenceResult{LargeFrom: 3, MemberSeqs: map[string]uint64{"a": 0, "n": 3},
					Items: []SequencedItem{
						planSeqd(2, planMsg("g", "1", "a", planMentionAll)),
						planSeqd(3, planMsg("g", "2", "a", planJoin("n"))),
						planSeqd(4, planMsg("g", "3", "n", planMentionAll)),
					}}},
			want: "a:L:c0 o2 o3 \nb:L:c0 m2 \nc:L:c0 m2 \nn:L:c0 j3 o4 \n",
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := renderPlan(PlanInbox(tc.in.conv, tc.in.res, tc.in.all)); got != tc.want {
				t.Fatalf("got\n%s\nwant\n%s", got, tc.want)
			}
		})
	}
}

// Message builders of the plan's cases.

func planMsg(conv, id, sender string, opts ...func(*schemas.Message)) *schemas.Message {
	m := &schemas.Message{ClientMsgId: id, ConvId: conv, ConvType: schemas.ConvType_CONV_TYPE_GROUP,
		Sender: sender, Kind: schemas.Kind_KIND_MESSAGE, ContentType: "text/plain", Body: []byte("body of " + id)}
	for _, o := range opts {
		o(m)
	}
	return m
}

func planTo(peer string) func(*schemas.Message) {
	return func(m *schemas.Message) {
		m.ConvType, m.Recipients = schemas.ConvType_CONV_TYPE_DIRECT, []string{peer}
	}
}

func planMentions(users ...string) func(*schemas.Message) {
	return func(m *schemas.Message) { m.Mentions = users }
}

func planMentionAll(m *schemas.Message) { m.MentionAll = true }

func planJoin(users ...string) func(*schemas.Message) {
	return func(m *schemas.Message) { m.Kind, m.Recipients, m.Body = schemas.Kind_KIND_MEMBER_JOIN, users, nil }
}

func planLeave(users ...string) func(*schemas.Message) {
	return func(m *schemas.Message) { m.Kind, m.Recipients, m.Body = schemas.Kind_KIND_MEMBER_LEAVE, users, nil }
}
