package push

import (
	"testing"

	"github.com/offlinebox/offlinebox/schemas"
)

// What a dead letter's sender is told: nothing for a record that got a
// seq, its code for a refusal, and for a letter written before letters
// carried their seq and code, the code its reason's beginning names.
func TestADeadLetterIsToldToItsSenderOnlyWithoutASeqAndByItsPublicCode(t *testing.T) {
	cases := []struct {
		name, reason, code, seq string
		hasSeq                  bool
		want                    string // "" for not told
	}{
		{name: "refused, with its code", reason: "sender: is not a member of the group", code: "not_a_member", seq: "0", hasSeq: true, want: "not_a_member"},
		{name: "sequenced", reason: "sequenced as seq 5 of g: bob: WRONGTYPE", seq: "5", hasSeq: true},
		{name: "no seq and no code: no refusal", reason: "in a batch of g (epoch 1), but ...", seq: "0", hasSeq: true},
		{name: "an unknown code", reason: "x", code: "OBHELD", seq: "0", hasSeq: true, want: schemas.RefusalFailed},
		{name: "old, sequenced", reason: "sequenced as seq 5 of g (epoch 1), but its inbox update failed"},
		{name: "old, held", reason: "not sequenced: the sequencing of g can never succeed: OBHELD P{c:g}:held", want: schemas.RefusalUnavailable},
		{name: "old, too large", reason: "body: is 9 bytes, more than the limit of 8", want: schemas.RefusalTooLarge},
		{name: "old, anything else", reason: "master key k3 is missing", want: schemas.RefusalFailed},
	}
	for _, tc := range cases {
		code, ok := publicRefusal(tc.reason, tc.code, tc.seq, tc.hasSeq)
		if ok != (tc.want != "") || code != tc.want {
			t.Errorf("%s: told %q (%v), want %q", tc.name, code, ok, tc.want)
		}
	}
}
