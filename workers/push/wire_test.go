package push

import (
	"slices"
	"testing"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"github.com/offlinebox/offlinebox/schemas"
)

func marshalSequenced(t *testing.T, sq *schemas.Sequenced) []byte {
	t.Helper()
	v, err := proto.Marshal(sq)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// withMessageField appends a raw field to the message of a marshalled
// Sequenced (re-wrapping it), for shapes proto.Marshal does not write.
func withMessageField(t *testing.T, sq *schemas.Sequenced, field []byte) []byte {
	t.Helper()
	msg, err := proto.Marshal(sq.GetMessage())
	if err != nil {
		t.Fatal(err)
	}
	rest := marshalSequenced(t, &schemas.Sequenced{Seq: sq.GetSeq(), Epoch: sq.GetEpoch(), WriteTimeMs: sq.GetWriteTimeMs()})
	out := protowire.AppendTag(nil, sequencedMessageNum, protowire.BytesType)
	out = protowire.AppendBytes(out, append(msg, field...))
	return append(out, rest...)
}

func rawString(num protowire.Number, s string) []byte {
	b := protowire.AppendTag(nil, num, protowire.BytesType)
	return protowire.AppendString(b, s)
}

func TestSequencedPushReadsWhatDecodeSequencedReadsOrDefersToIt(t *testing.T) {
	body := make([]byte, 225)
	direct := &schemas.Sequenced{Seq: 7, Epoch: 2, WriteTimeMs: 99, DataKey: "m1:abc", Message: &schemas.Message{
		ClientMsgId: "c1", ConvId: "dm-a-b", ConvType: schemas.ConvType_CONV_TYPE_DIRECT, Sender: "alice",
		Recipients: []string{"bob"}, Kind: schemas.Kind_KIND_MESSAGE, Body: body, SendTimeMs: 5, Tag: "t"}}
	join := &schemas.Sequenced{Seq: 3, Message: &schemas.Message{ConvId: "team", ConvType: schemas.ConvType_CONV_TYPE_GROUP,
		Sender: "owner", Recipients: []string{"ann", "bob"}, Kind: schemas.Kind_KIND_MEMBER_JOIN, Mentions: []string{"x"}}}
	group := &schemas.Sequenced{Seq: 1 << 40, Message: &schemas.Message{ConvId: "g1", Sender: "u", Body: body}}
	cases := []struct {
		name  string
		value []byte
		// read: a shape the pipeline writes, which must not be deferred
		read bool
	}{
		{"direct message", marshalSequenced(t, direct), true},
		{"join with recipients", marshalSequenced(t, join), true},
		{"group message", marshalSequenced(t, group), true},
		{"the last kind counts", withMessageField(t, join, protowire.AppendVarint(
			protowire.AppendTag(nil, messageKindNum, protowire.VarintType), uint64(schemas.Kind_KIND_MEMBER_LEAVE))), true},
		{"an unknown field", withMessageField(t, group, rawString(1000, "later")), true},
		{"the last conversation counts", withMessageField(t, group, rawString(messageConvNum, "g2")), true},
		{"a sender that is not UTF-8", withMessageField(t, group, rawString(messageSenderNum, "\xff\xfe")), false},
		{"a mention that is not UTF-8", withMessageField(t, group, rawString(messageDesc.Fields().ByName("mentions").Number(), "\xc3")), false},
		{"a data key that is not UTF-8", append(marshalSequenced(t, group), rawString(sequencedDesc.Fields().ByName("data_key").Number(), "\xff")...), false},
		{"a kind of the wrong wire type", withMessageField(t, group, rawString(messageKindNum, "x")), false},
		{"the message given twice", append(marshalSequenced(t, group), marshalSequenced(t, &schemas.Sequenced{Message: &schemas.Message{Sender: "v"}})...), false},
		{"no seq", marshalSequenced(t, &schemas.Sequenced{Message: group.GetMessage()}), false},
		{"no message", marshalSequenced(t, &schemas.Sequenced{Seq: 4}), false},
		{"no conversation", marshalSequenced(t, &schemas.Sequenced{Seq: 4, Message: &schemas.Message{Sender: "u"}}), false},
		{"a conversation id out of bounds", marshalSequenced(t, &schemas.Sequenced{Seq: 4, Message: &schemas.Message{ConvId: "a b"}}), false},
		{"truncated", marshalSequenced(t, direct)[:40], false},
		{"not protobuf", []byte{0xff, 0xff, 0xff}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			it, ok := sequencedPush(tc.value)
			sq, err := schemas.DecodeSequenced(tc.value)
			if err != nil {
				if ok {
					t.Fatalf("read %+v from a record DecodeSequenced refuses (%v)", it, err)
				}
				return
			}
			if !ok {
				if tc.read {
					t.Fatal("deferred to the full decode a record of the shape the pipeline writes")
				}
				return // deferring is always safe
			}
			m := sq.GetMessage()
			if it.conv != m.GetConvId() || it.seq != sq.GetSeq() || it.msgKind != m.GetKind() || it.sender != m.GetSender() ||
				!slices.Equal(it.recipients, m.GetRecipients()) {
				t.Fatalf("read conv %q seq %d kind %v sender %q recipients %v; DecodeSequenced reads %q %d %v %q %v",
					it.conv, it.seq, it.msgKind, it.sender, it.recipients, m.GetConvId(), sq.GetSeq(), m.GetKind(), m.GetSender(), m.GetRecipients())
			}
		})
	}
}

func TestWireReaderKnowsTheFieldsItReadsByTheirDescriptorTypes(t *testing.T) {
	for _, f := range []struct {
		fields map[protowire.Number]wireField
		num    protowire.Number
		want   protowire.Type
	}{
		{sequencedWire, sequencedMessageNum, protowire.BytesType},
		{sequencedWire, sequencedSeqNum, protowire.VarintType},
		{messageWire, messageConvNum, protowire.BytesType},
		{messageWire, messageSenderNum, protowire.BytesType},
		{messageWire, messageRecipNum, protowire.BytesType},
		{messageWire, messageKindNum, protowire.VarintType},
	} {
		if got := f.fields[f.num]; got.typ != f.want {
			t.Errorf("field %d reads as wire type %d, want %d", f.num, got.typ, f.want)
		}
	}
	if !messageWire[messageConvNum].string || messageWire[messageDesc.Fields().ByName("body").Number()].string {
		t.Error("conv_id must be checked as UTF-8 and body must not")
	}
}
