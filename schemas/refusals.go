package schemas

import (
	"errors"
	"strings"
)

// The public refusal codes: what a sender is told of a record of theirs
// the pipeline refused for good, with one sentence (RefusalSentence). The
// details (which key, which store error, which other user) stay in the
// logs and the dead letter's reason header; they are the operator's, not
// the sender's.
const (
	// RefusalNotAMember: the sender is not a member of the conversation
	// (a group they are not in, a direct conversation of two others).
	RefusalNotAMember = "not_a_member"
	// RefusalNotAllowed: the sender's role does not allow the change.
	RefusalNotAllowed = "not_allowed"
	// RefusalTooLarge: a limit was broken (body, mentions, recipients,
	// the record's size).
	RefusalTooLarge = "too_large"
	// RefusalInvalid: the record is malformed or contradicts the
	// conversation (its type, how a group begins).
	RefusalInvalid = "invalid"
	// RefusalUnavailable: the conversation cannot take records now (held
	// for a repair, its store refusing it for good, sequenced elsewhere).
	RefusalUnavailable = "conversation_unavailable"
	// RefusalFailed: any other refusal.
	RefusalFailed = "not_sent"
)

var refusalSentences = map[string]string{
	RefusalNotAMember:  "You are not a member of this conversation.",
	RefusalNotAllowed:  "Your role in this group does not allow this change.",
	RefusalTooLarge:    "The message is larger than the limits allow.",
	RefusalInvalid:     "The message is not valid for this conversation.",
	RefusalUnavailable: "The conversation cannot take messages right now.",
	RefusalFailed:      "The message could not be sent.",
}

// RefusalCodes are the codes of the public vocabulary.
func RefusalCodes() []string {
	return []string{RefusalNotAMember, RefusalNotAllowed, RefusalTooLarge, RefusalInvalid, RefusalUnavailable, RefusalFailed}
}

// RefusalSentence is a code's one sentence; an unknown code is answered
// as RefusalFailed's.
func RefusalSentence(code string) string {
	if s, ok := refusalSentences[code]; ok {
		return s
	}
	return refusalSentences[RefusalFailed]
}

// PublicRefusal is code if it is one of the vocabulary, else RefusalFailed.
func PublicRefusal(code string) string {
	if _, ok := refusalSentences[code]; ok {
		return code
	}
	return RefusalFailed
}

// RefusalOf is the code of an error a record was refused with: an
// InvalidError by its field and reason, anything else RefusalFailed.
func RefusalOf(err error) string {
	var ie *InvalidError
	if !errors.As(err, &ie) {
		return RefusalFailed
	}
	return refusalOfInvalid(ie.Field, ie.Reason)
}

// refusalOfInvalid classifies a validation or sequencing refusal as the
// schemas and sequence.lua word them.
func refusalOfInvalid(field, reason string) string {
	switch {
	case strings.Contains(reason, "more than the limit") || strings.Contains(reason, "more than the record limit"):
		return RefusalTooLarge
	case field == "sender" && (strings.HasPrefix(reason, "is not a member") ||
		strings.HasPrefix(reason, "direct conversation already has")):
		return RefusalNotAMember
	case strings.Contains(reason, "only the owner"):
		return RefusalNotAllowed
	}
	return RefusalInvalid
}

// sequencedReasons begin the reasons fanout gave the dead letters of
// records that were sequenced (an inbox update, the sequenced topic or a
// data key failed after): such a record reached its conversation, and is
// never its sender's refusal.
var sequencedReasons = []string{"sequenced as seq ", "delivered in ", "in a batch of ", "duplicate of seq "}

// invalidFields are the fields whose InvalidError text begins a reason
// ("field: reason") fanout gave a refused record.
var invalidFields = []string{"record", "body", "mentions", "recipients", "sender", "conv_id", "conv_type",
	"client_msg_id", "kind", "qos", "role", "authority", "content_type"}

// LegacyRefusal reads the reason of a dead letter written before dead
// letters carried HeaderDeadCode and HeaderDeadSeq: sequenced reports
// that the record was sequenced (not a refusal; nobody is told), else
// code is the reason's public code, by its recognisable beginning, and
// RefusalFailed for anything else. The reason itself is never shown.
func LegacyRefusal(reason string) (code string, sequenced bool) {
	for _, p := range sequencedReasons {
		if strings.HasPrefix(reason, p) {
			return "", true
		}
	}
	if strings.HasPrefix(reason, "not sequenced: ") || strings.Contains(reason, "sequenced elsewhere while its bodies were sealed") {
		return RefusalUnavailable, false
	}
	field, rest, ok := strings.Cut(reason, ": ")
	if ok {
		for _, f := range invalidFields {
			if field == f {
				return refusalOfInvalid(field, rest), false
			}
		}
	}
	return RefusalFailed, false
}
