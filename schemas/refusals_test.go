package schemas

import (
	"strings"
	"testing"
)

// A dead letter written before letters carried their code is read by its
// reason's beginning: a sequenced record's is nobody's refusal, a refusal
// gets its public code, and anything else the generic one, never the text.
func TestLegacyRefusalMapsOldReasonsToPublicCodesAndSequencedOnesToNone(t *testing.T) {
	cases := []struct {
		reason    string
		code      string
		sequenced bool
	}{
		{"sender: is not a member of the group", RefusalNotAMember, false},
		{"sender: direct conversation already has two other participants", RefusalNotAMember, false},
		{"sender: only the owner or an admin adds members", RefusalNotAllowed, false},
		{"recipients: bob is the owner or an admin: only the owner removes them", RefusalNotAllowed, false},
		{"body: is 1001 bytes, more than the limit of 1000", RefusalTooLarge, false},
		{"record: is 900000 bytes, more than the record limit of 786432", RefusalTooLarge, false},
		{"record: does not decode as a Message: proto: cannot parse", RefusalInvalid, false},
		{"conv_type: is g but the conversation is d", RefusalInvalid, false},
		{"not sequenced: the sequencing of g can never succeed: OBHELD P{c:g}:held is set", RefusalUnavailable, false},
		{"conversation sequenced elsewhere while its bodies were sealed: 9 tries in 2s", RefusalUnavailable, false},
		{"sequenced as seq 7 of g (epoch 1), but its inbox update failed for good for 1 recipients: bob: WRONGTYPE", "", true},
		{"delivered in g (epoch 1), but the mark ... can never be written: WRONGTYPE", "", true},
		{"in a batch of g (epoch 1), but its inbox update failed for good", "", true},
		{"duplicate of seq 1 of d, whose stored entry cannot be decoded: bad entry", "", true},
		{"master key k7 is not in the ring", RefusalFailed, false},
		{"", RefusalFailed, false},
	}
	for _, tc := range cases {
		code, seq := LegacyRefusal(tc.reason)
		if code != tc.code || seq != tc.sequenced {
			t.Errorf("LegacyRefusal(%q) = %q, %v; want %q, %v", tc.reason, code, seq, tc.code, tc.sequenced)
		}
	}
}

// Every code has one plain sentence, and no sentence names an internal.
func TestEveryRefusalCodeHasAPlainSentence(t *testing.T) {
	for _, c := range RefusalCodes() {
		s := RefusalSentence(c)
		if s == "" || strings.ContainsAny(s, "{}:|") || !strings.HasSuffix(s, ".") {
			t.Errorf("code %s: sentence %q", c, s)
		}
		if PublicRefusal(c) != c {
			t.Errorf("PublicRefusal(%s) = %s", c, PublicRefusal(c))
		}
	}
	if PublicRefusal("OBHELD") != RefusalFailed || RefusalSentence("nope") != RefusalSentence(RefusalFailed) {
		t.Error("an unknown code is not answered as the generic one")
	}
}
