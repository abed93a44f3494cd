package fanout

import (
	"fmt"
	"strings"
	"testing"

	"github.com/offlinebox/offlinebox/redisstore"
	"github.com/offlinebox/offlinebox/schemas"
)

func seqd(seq uint64, m *schemas.Message) redisstore.SequencedItem {
	return redisstore.SequencedItem{Status: redisstore.SeqNew,
		Sequenced: &schemas.Sequenced{Message: m, Seq: seq, WriteTimeMs: int64(1000 + seq)}}
}

// render writes updates as "user:form:events" lines, events as kind+seq.
func render(ups []redisstore.InboxUpdate) string {
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
		in   planInput
		want string
	}{
		{
			name: "small group: delivery, own, mention; a later joiner sees only what follows its join",
			in: planInput{conv: "g", res: &redisstore.SequenceResult{
				Members: map[string]uint64{"a": 0, "b": 0, "c": 3},
				Items: []redisstore.SequencedItem{
					seqd(2, msg("g", "1", "a", mentions("b"))),
					seqd(3, msg("g", "2", "a", join("c"))),
					seqd(4, msg("g", "3", "b", mentionAll)),
				}}},
			want: "a:g:o2 o3 m4 \nb:g:m2 d3 o4 \nc:g:j3 m4 \n",
		},
		{
			name: "direct conversation",
			in: planInput{conv: "d", res: &redisstore.SequenceResult{
				Members: map[string]uint64{"a": 0, "b": 0},
				Items:   []redisstore.SequencedItem{seqd(1, msg("d", "1", "a", to("b")))}}},
			want: "a:d:o1 \nb:d:d1 \n",
		},
		{
			name: "rejected records and expired duplicates write nothing; a resend is not applied twice",
			in: planInput{conv: "d", res: &redisstore.SequenceResult{
				Members: map[string]uint64{"a": 0, "b": 0},
				Items: []redisstore.SequencedItem{
					seqd(5, msg("d", "1", "a", to("b"))),
					{Status: redisstore.SeqRejected, Reason: fmt.Errorf("no")},
					{Status: redisstore.SeqDuplicate},
					{Status: redisstore.SeqDuplicate, Sequenced: seqd(5, msg("d", "1", "a", to("b"))).Sequenced},
					{Status: redisstore.SeqDuplicate, Sequenced: seqd(2, msg("d", "0", "b", to("a"))).Sequenced},
				}}},
			want: "a:d:d2 o5 \nb:d:o2 d5 \n",
		},
		{
			name: "large group: sender, named members, joiner and leaver only; @all writes nobody",
			in: planInput{conv: "L", res: &redisstore.SequenceResult{
				LargeFrom: 1, LargeConverted: true,
				MemberSeqs: map[string]uint64{"a": 0, "b": 0, "j": 9},
				Items: []redisstore.SequencedItem{
					seqd(8, msg("L", "1", "a", mentions("b", "outsider", "a"), mentionAll)),
					seqd(9, msg("L", "2", "a", join("j"))),
					seqd(10, msg("L", "3", "j", mentions("b"))),
				}}},
			want: "a:L:o8 o9 \nb:L:m8 m10 \nj:L:j9 o10 \n",
		},
		{
			name: "large group: a leave (first of its batch) reaches the leaver only as its leave",
			in: planInput{conv: "L", res: &redisstore.SequenceResult{
				LargeFrom: 1, LargeConverted: true,
				MemberSeqs: map[string]uint64{"a": 0},
				Items: []redisstore.SequencedItem{
					seqd(11, msg("L", "4", "b", leave("b"))),
					seqd(12, msg("L", "5", "a", mentions("b"))),
				}}},
			want: "a:L:o12 \nb:L:x11 \n",
		},
		{
			name: "a group that just became large: every member converts, records before the switch mention everyone",
			in: planInput{conv: "g", all: map[string]uint64{"a": 0, "b": 0, "c": 0, "n": 3},
				res: &redisstore.SequenceResult{LargeFrom: 3, MemberSeqs: map[string]uint64{"a": 0, "n": 3},
					Items: []redisstore.SequencedItem{
						seqd(2, msg("g", "1", "a", mentionAll)),
						seqd(3, msg("g", "2", "a", join("n"))),
						seqd(4, msg("g", "3", "n", mentionAll)),
					}}},
			want: "a:L:c0 o2 o3 \nb:L:c0 m2 \nc:L:c0 m2 \nn:L:c0 j3 o4 \n",
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := render(planInbox(tc.in)); got != tc.want {
				t.Fatalf("got\n%s\nwant\n%s", got, tc.want)
			}
		})
	}
}

func TestMergeBatchesCutAtTheSizeAndBeforeEveryLeave(t *testing.T) {
	kinds := func(spec string) []pending {
		var out []pending
		for i, c := range spec {
			m := msg("g", fmt.Sprint(i), "a")
			if c == 'L' {
				leave("b")(m)
			}
			out = append(out, pending{msg: m})
		}
		return out
	}
	cases := []struct {
		spec string
		size int
		want string
	}{
		{"mmmmm", 2, "[mm mm m]"},
		{"mmLmm", 20, "[mm Lmm]"},
		{"LmLL", 20, "[Lm L L]"},
		{"mmmLm", 3, "[mmm Lm]"},
		{"", 20, "[]"},
	}
	for _, tc := range cases {
		var got []string
		for _, b := range mergeBatches(kinds(tc.spec), tc.size) {
			var s strings.Builder
			for _, p := range b {
				if p.msg.GetKind() == schemas.Kind_KIND_MEMBER_LEAVE {
					s.WriteByte('L')
				} else {
					s.WriteByte('m')
				}
			}
			got = append(got, s.String())
		}
		if fmt.Sprint(got) != tc.want {
			t.Errorf("%q by %d: %v, want %s", tc.spec, tc.size, got, tc.want)
		}
	}
}
