package checker

import (
	"fmt"
	"testing"

	"github.com/offlinebox/offlinebox/schemas"
)

func truthOf(t *testing.T, ms ...*schemas.Message) *Truth {
	tr := &Truth{Convs: map[string]*ConvTruth{}}
	for _, m := range ms {
		tr.add(encode(t, m), 0)
	}
	return tr
}

func rec(id, sender string, kind schemas.Kind, users ...string) *schemas.Message {
	return &schemas.Message{ClientMsgId: id, ConvId: "g", ConvType: schemas.ConvType_CONV_TYPE_GROUP, Kind: kind,
		Sender: sender, Recipients: users}
}

func TestAUserWhoLeftTwiceMayHoldEverySpanTheyBelongedTo(t *testing.T) {
	join, leave, msg := schemas.Kind_KIND_MEMBER_JOIN, schemas.Kind_KIND_MEMBER_LEAVE, schemas.Kind_KIND_MESSAGE
	tr := truthOf(t,
		rec("found", "a", join, "a", "b"), // 1: b is a founder, a the owner
		rec("m2", "a", msg),
		rec("bye", "b", leave, "b"), // 3
		rec("m4", "a", msg),
		rec("back", "a", join, "b"), // 5
		rec("m6", "a", msg),
		rec("bye2", "b", leave, "b"), // 7
		rec("m8", "a", msg),
	)
	if got := fmt.Sprint(tr.For("b")["g"].Optional); got != "[{0 3} {5 7}]" {
		t.Fatalf("b's spans %s, want both: 1..2 and 6", got)
	}
	for _, tc := range []struct {
		name       string
		held       map[uint64]string
		unexpected int
	}{
		{"both spans", map[uint64]string{1: "found", 2: "m2", 6: "m6"}, 0},
		{"a seq between the spans", map[uint64]string{4: "m4"}, 1},
		{"a seq after the last leave", map[uint64]string{8: "m8"}, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := &device{Device: Device{User: "b", ID: "d1"}, st: newLocalStore()}
			d.st.conv("g").msgs = inEpoch(1, tc.held)
			r := account(tr, &Workload{}, []*device{d})
			if got := r.Devices[0].Unexpected; got != tc.unexpected {
				t.Fatalf("unexpected %d, want %d (problems %v)", got, tc.unexpected, r.Problems)
			}
		})
	}
}

func TestTruthGivesNoSeqToWhatTheGroupsAuthorityRefuses(t *testing.T) {
	join, leave, msg := schemas.Kind_KIND_MEMBER_JOIN, schemas.Kind_KIND_MEMBER_LEAVE, schemas.Kind_KIND_MESSAGE
	tr := truthOf(t,
		rec("found", "a", join, "a", "b"),
		rec("grab", "x", join, "x"),
		rec("spam", "x", msg),
		rec("coup", "b", leave, "a"),
		rec("invite", "b", join, "c"),
		rec("m", "b", msg),
	)
	c := tr.Convs["g"]
	if tr.Refused != 4 || fmt.Sprint(c.IDs) != "[found m]" {
		t.Fatalf("refused %d, seqs %v; want 4 refused and found, m sequenced", tr.Refused, c.IDs)
	}
	if c.Refused["coup"] != "sender: only the owner or an admin removes others" {
		t.Fatalf("coup refused for %q", c.Refused["coup"])
	}
	w := &Workload{Stream: []Item{{Msg: rec("grab", "x", join, "x")}}}
	if r := account(tr, w, nil); r.NotInLog != 0 || r.Refused != 4 {
		t.Fatalf("not in log %d, refused %d: a refused record is expected, not lost", r.NotInLog, r.Refused)
	}
}

// TestNamespacedWorkloadsShareNoUserConversationOrMessageID: two workloads
// of one seed in different namespaces can be played on one system one
// after another without meeting.
func TestNamespacedWorkloadsShareNoUserConversationOrMessageID(t *testing.T) {
	ids := func(ns string) map[string]bool {
		w, err := Generate(Config{Seed: 1, Namespace: ns, LargeGroupSize: 2001, APIMessages: 10, Joins: 2})
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]bool{}
		for _, d := range w.Devices {
			out["user "+d.User] = true
		}
		for _, it := range append(w.Setup, w.Stream...) {
			if it.Msg == nil {
				continue
			}
			out["conv "+it.Msg.GetConvId()], out["msg "+it.Msg.GetClientMsgId()], out["user "+it.Msg.GetSender()] = true, true, true
			for _, r := range it.Msg.GetRecipients() {
				out["user "+r] = true
			}
		}
		return out
	}
	a, b := ids("r0-"), ids("r1-")
	if len(a) == 0 {
		t.Fatal("no ids generated")
	}
	for id := range a {
		if b[id] {
			t.Fatalf("%s is in both namespaces", id)
		}
	}
}
