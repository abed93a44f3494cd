package push

import (
	"unicode/utf8"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/offlinebox/offlinebox/live"
	"github.com/offlinebox/offlinebox/schemas"
)

// The field numbers the wire reader looks at, read from the generated
// descriptors so that a renumbering in the .proto cannot leave it reading
// another field.
var (
	sequencedDesc       = (&schemas.Sequenced{}).ProtoReflect().Descriptor()
	messageDesc         = (&schemas.Message{}).ProtoReflect().Descriptor()
	sequencedMessageNum = sequencedDesc.Fields().ByName("message").Number()
	sequencedSeqNum     = sequencedDesc.Fields().ByName("seq").Number()
	messageConvNum      = messageDesc.Fields().ByName("conv_id").Number()
	messageSenderNum    = messageDesc.Fields().ByName("sender").Number()
	messageRecipNum     = messageDesc.Fields().ByName("recipients").Number()
	messageKindNum      = messageDesc.Fields().ByName("kind").Number()
	// The fields of each message by number, with the wire type a
	// well-formed record gives them.
	sequencedWire = wireTypes(sequencedDesc)
	messageWire   = wireTypes(messageDesc)
)

// wireField is what the reader knows of a field: its wire type, and that
// proto.Unmarshal checks it is UTF-8 (a string).
type wireField struct {
	typ    protowire.Type
	string bool
}

func wireTypes(md protoreflect.MessageDescriptor) map[protowire.Number]wireField {
	out := map[protowire.Number]wireField{}
	fields := md.Fields()
	for i := range fields.Len() {
		fd := fields.Get(i)
		var typ protowire.Type
		switch fd.Kind() {
		case protoreflect.StringKind, protoreflect.BytesKind, protoreflect.MessageKind:
			typ = protowire.BytesType
		case protoreflect.Fixed32Kind, protoreflect.Sfixed32Kind, protoreflect.FloatKind:
			typ = protowire.Fixed32Type
		case protoreflect.Fixed64Kind, protoreflect.Sfixed64Kind, protoreflect.DoubleKind:
			typ = protowire.Fixed64Type
		case protoreflect.GroupKind:
			typ = protowire.StartGroupType
		default:
			typ = protowire.VarintType
			if fd.IsList() {
				typ = -1 // packed or not: left to proto.Unmarshal
			}
		}
		out[fd.Number()] = wireField{typ: typ, string: fd.Kind() == protoreflect.StringKind}
	}
	return out
}

// sequencedPush reads the little a push needs of an im.sequenced record
// (conversation, seq, kind, sender, recipients) straight from the wire,
// without building the message: the record itself is what the nodes are
// sent, and proto.Unmarshal on the fresh goroutine of each Handle call
// was most of the stage's cost per record. It answers ok only for a
// record that schemas.DecodeSequenced reads the same and accepts; for any
// other (a field of an unexpected wire type, the message given twice, a
// string that is not UTF-8, no conversation or seq) it answers !ok and
// the caller decodes in full, so what it cannot vouch for is judged as
// before.
func sequencedPush(value []byte) (*item, bool) {
	var msg []byte
	var seq uint64
	haveMsg := false
	ok := walk(value, sequencedWire, func(num protowire.Number, v []byte, varint uint64) bool {
		switch num {
		case sequencedMessageNum:
			if haveMsg {
				return false // proto.Unmarshal merges a message given twice
			}
			msg, haveMsg = v, true
		case sequencedSeqNum:
			seq = varint
		}
		return true
	})
	if !ok || !haveMsg || seq == 0 {
		return nil, false
	}
	it := &item{kind: live.KindPush, seq: seq}
	ok = walk(msg, messageWire, func(num protowire.Number, v []byte, varint uint64) bool {
		switch num {
		case messageConvNum:
			it.conv = string(v)
		case messageSenderNum:
			it.sender = string(v)
		case messageRecipNum:
			it.recipients = append(it.recipients, string(v))
		case messageKindNum:
			it.msgKind = schemas.Kind(int32(varint)) // the last one counts
		}
		return true
	})
	if !ok || schemas.ValidID("conv_id", it.conv) != nil {
		return nil, false
	}
	return it, true
}

// walk calls field for each field of the message in b that fields knows
// (with its bytes, or its value for a varint), after checking its wire
// type and, for a string, that it is UTF-8; it skips unknown fields as
// proto.Unmarshal keeps them. It reports false when b does not read as
// a well-formed message or field does.
func walk(b []byte, fields map[protowire.Number]wireField, field func(num protowire.Number, v []byte, varint uint64) bool) bool {
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return false
		}
		b = b[n:]
		f, known := fields[num]
		if !known {
			m := protowire.ConsumeFieldValue(num, typ, b)
			if m < 0 {
				return false
			}
			b = b[m:]
			continue
		}
		if f.typ != typ {
			return false
		}
		var v []byte
		var varint uint64
		var m int
		switch typ {
		case protowire.BytesType:
			v, m = protowire.ConsumeBytes(b)
			if m >= 0 && f.string && !utf8.Valid(v) {
				return false
			}
		case protowire.VarintType:
			varint, m = protowire.ConsumeVarint(b)
		default:
			m = protowire.ConsumeFieldValue(num, typ, b)
		}
		if m < 0 || !field(num, v, varint) {
			return false
		}
		b = b[m:]
	}
	return true
}
