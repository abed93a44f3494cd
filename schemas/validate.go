package schemas

import (
	"errors"
	"fmt"
	"unicode/utf8"

	"google.golang.org/protobuf/proto"
)

// MaxIDBytes bounds every id (conversation, user, device, client message).
const MaxIDBytes = 128

// MaxSeq is the largest seq or epoch there can be: the Redis scripts count
// in doubles, exact up to 2^53.
const MaxSeq = 1<<53 - 1

// ErrInvalid marks a record that no retry can fix: it goes to the dead-letter
// topic (workers) or gets a 400 (api).
var ErrInvalid = errors.New("invalid record")

// InvalidError says which field of a record is wrong.
type InvalidError struct {
	Field  string
	Reason string
}

func (e *InvalidError) Error() string { return e.Field + ": " + e.Reason }

// Unwrap lets callers test errors.Is(err, ErrInvalid).
func (e *InvalidError) Unwrap() error { return ErrInvalid }

func invalid(field, format string, args ...any) error {
	return &InvalidError{Field: field, Reason: fmt.Sprintf(format, args...)}
}

// ValidID checks an id: non-empty, at most MaxIDBytes, valid UTF-8, and free
// of the characters the Redis key layout uses as separators ('{', '}', ':')
// and of control characters.
func ValidID(field, id string) error {
	switch {
	case id == "":
		return invalid(field, "is empty")
	case len(id) > MaxIDBytes:
		return invalid(field, "is %d bytes, more than %d", len(id), MaxIDBytes)
	case !utf8.ValidString(id):
		return invalid(field, "is not valid UTF-8")
	}
	for _, r := range id {
		if r == '{' || r == '}' || r == ':' || r < 0x20 || r == 0x7f {
			return invalid(field, "contains %q", r)
		}
	}
	return nil
}

// ValidateMessage checks a Message as a producer sent it, within lim (zero
// fields of lim take the defaults).
func ValidateMessage(m *Message, lim Limits) error {
	lim = lim.WithDefaults()
	if err := lim.check(m); err != nil {
		return err
	}
	if err := ValidID("conv_id", m.GetConvId()); err != nil {
		return err
	}
	if err := ValidID("sender", m.GetSender()); err != nil {
		return err
	}
	if err := ValidID("client_msg_id", m.GetClientMsgId()); err != nil {
		return err
	}
	switch m.GetConvType() {
	case ConvType_CONV_TYPE_DIRECT, ConvType_CONV_TYPE_GROUP:
	default:
		return invalid("conv_type", "unknown conversation type %d", m.GetConvType())
	}
	switch m.GetQos() {
	case QoS_QOS_UNSPECIFIED, QoS_QOS_AT_MOST_ONCE, QoS_QOS_AT_LEAST_ONCE:
	default:
		return invalid("qos", "unknown QoS %d", m.GetQos())
	}
	switch m.GetKind() {
	case Kind_KIND_MESSAGE:
		if m.GetConvType() == ConvType_CONV_TYPE_DIRECT && len(m.GetRecipients()) != 1 {
			return invalid("recipients", "a direct message needs exactly one recipient, got %d", len(m.GetRecipients()))
		}
	case Kind_KIND_MEMBER_JOIN, Kind_KIND_MEMBER_LEAVE:
		if m.GetConvType() != ConvType_CONV_TYPE_GROUP {
			return invalid("kind", "membership changes apply to groups only")
		}
		if len(m.GetRecipients()) == 0 {
			return invalid("recipients", "a membership change names the users joining or leaving")
		}
	default:
		return invalid("kind", "unknown kind %d", m.GetKind())
	}
	if err := validateAuthority(m); err != nil {
		return err
	}
	for i, r := range m.GetRecipients() {
		if err := ValidID(fmt.Sprintf("recipients[%d]", i), r); err != nil {
			return err
		}
	}
	for i, u := range m.GetMentions() {
		if err := ValidID(fmt.Sprintf("mentions[%d]", i), u); err != nil {
			return err
		}
	}
	if len(m.GetContentType()) > MaxIDBytes {
		return invalid("content_type", "is longer than %d bytes", MaxIDBytes)
	}
	if t := m.GetTag(); t != "" {
		if err := ValidID("tag", t); err != nil {
			return err
		}
	}
	return nil
}

// Stored reports whether a record is kept (QoS 1, or unspecified) rather
// than only passed on live (QoS 0).
func (m *Message) Stored() bool { return m.GetQos() != QoS_QOS_AT_MOST_ONCE }

// DecodeMessage decodes and validates a record value from im.messages. A
// value over lim.RecordBytes is refused before it is decoded.
func DecodeMessage(value []byte, lim Limits) (*Message, error) {
	lim = lim.WithDefaults()
	if len(value) > lim.RecordBytes {
		return nil, invalid("record", "is %d bytes, more than the record limit of %d", len(value), lim.RecordBytes)
	}
	var m Message
	if err := proto.Unmarshal(value, &m); err != nil {
		return nil, &InvalidError{Field: "record", Reason: "does not decode as a Message: " + err.Error()}
	}
	if err := ValidateMessage(&m, lim); err != nil {
		return nil, err
	}
	return &m, nil
}

// DecodeSequenced decodes a record value from im.sequenced.
func DecodeSequenced(value []byte) (*Sequenced, error) {
	var s Sequenced
	if err := proto.Unmarshal(value, &s); err != nil {
		return nil, &InvalidError{Field: "record", Reason: "does not decode as a Sequenced: " + err.Error()}
	}
	if s.GetMessage() == nil || s.GetSeq() == 0 {
		return nil, invalid("record", "sequenced record without message or seq")
	}
	if err := ValidID("conv_id", s.GetMessage().GetConvId()); err != nil {
		return nil, err
	}
	return &s, nil
}

// DecodeReceipt decodes and validates a record value from im.receipts.
func DecodeReceipt(value []byte) (*Receipt, error) {
	var r Receipt
	if err := proto.Unmarshal(value, &r); err != nil {
		return nil, &InvalidError{Field: "record", Reason: "does not decode as a Receipt: " + err.Error()}
	}
	if err := ValidID("user_id", r.GetUserId()); err != nil {
		return nil, err
	}
	if err := ValidID("conv_id", r.GetConvId()); err != nil {
		return nil, err
	}
	if r.GetKind() != ReceiptKind_RECEIPT_KIND_READ {
		return nil, invalid("kind", "unknown receipt kind %d", r.GetKind())
	}
	return &r, nil
}

// validateAuthority checks the membership fields of a record: a role only
// on a join (ownership goes to one user), and a known authority.
func validateAuthority(m *Message) error {
	switch r := m.GetRole(); {
	case r == Role_ROLE_UNSPECIFIED:
	case r != Role_ROLE_MEMBER && r != Role_ROLE_ADMIN && r != Role_ROLE_OWNER:
		return invalid("role", "unknown role %d", r)
	case m.GetKind() != Kind_KIND_MEMBER_JOIN:
		return invalid("role", "is given by member_join records only")
	case r == Role_ROLE_OWNER && len(m.GetRecipients()) != 1:
		return invalid("recipients", "ownership goes to one user, got %d", len(m.GetRecipients()))
	}
	switch m.GetAuthority() {
	case Authority_AUTHORITY_SENDER, Authority_AUTHORITY_SYSTEM:
	default:
		return invalid("authority", "unknown authority %d", m.GetAuthority())
	}
	return nil
}
