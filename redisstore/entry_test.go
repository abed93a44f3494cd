package redisstore

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/offlinebox/offlinebox/schemas"
)

func TestEntryFieldNumbersAreTheMessagesOwn(t *testing.T) {
	fields := (&schemas.Message{}).ProtoReflect().Descriptor().Fields()
	for name, num := range map[protoreflect.Name]protowire.Number{"client_msg_id": entryFieldClientMsgID, "conv_id": entryFieldConvID,
		"content_type": entryFieldContentType} {
		if f := fields.ByName(name); f == nil || f.Number() != num {
			t.Fatalf("field %s is %v, entryBody takes it as number %d", name, f, num)
		}
	}
}

func TestEntryStoresNoConvIDAndDecodesWithTheKeys(t *testing.T) {
	cases := []struct {
		name string
		msg  *schemas.Message
	}{
		{"text message", &schemas.Message{ClientMsgId: "0b0f6a3e-8f7c-4c1e-9d55-6f1c2d3e4f50", ConvId: "conv-42",
			ConvType: schemas.ConvType_CONV_TYPE_GROUP, Sender: "alice", Mentions: []string{"bob"}, MentionAll: true,
			Qos: schemas.QoS_QOS_AT_LEAST_ONCE, Kind: schemas.Kind_KIND_MESSAGE, ContentType: "text/plain",
			Body: []byte("hello\x00\xff"), SendTimeMs: 1_700_000_000_123}},
		{"join record without body", &schemas.Message{ClientMsgId: "j1", ConvId: "g", ConvType: schemas.ConvType_CONV_TYPE_GROUP,
			Sender: "admin", Recipients: []string{"u1", "u2"}, Kind: schemas.Kind_KIND_MEMBER_JOIN}},
		{"longest id", &schemas.Message{ClientMsgId: string(bytes.Repeat([]byte("x"), schemas.MaxIDBytes)), ConvId: "d",
			ConvType: schemas.ConvType_CONV_TYPE_DIRECT, Sender: "a", Recipients: []string{"b"}, Kind: schemas.Kind_KIND_MESSAGE}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			raw, err := EncodeEntry(12, 1_700_000_000_999, tc.msg)
			if err != nil {
				t.Fatal(err)
			}
			prefix := []byte("12:1700000000999:")
			if !bytes.HasPrefix(raw, prefix) {
				t.Fatalf("entry %q does not start with %q", raw, prefix)
			}
			body := raw[len(prefix):]
			id := appendEntryID(nil, tc.msg.GetClientMsgId())
			if !bytes.HasPrefix(body, id) {
				t.Fatalf("body %q does not start with the client_msg_id field %q", body, id)
			}
			var stored schemas.Message
			if err := proto.Unmarshal(body[len(id):], &stored); err != nil || stored.GetConvId() != "" {
				t.Fatalf("stored body holds conv_id %q (err %v), want none", stored.GetConvId(), err)
			}
			got, err := DecodeEntry(raw, tc.msg.GetConvId(), 7)
			if err != nil {
				t.Fatal(err)
			}
			if !proto.Equal(got.GetMessage(), tc.msg) || got.GetSeq() != 12 || got.GetWriteTimeMs() != 1_700_000_000_999 || got.GetEpoch() != 7 {
				t.Fatalf("decoded %v, want %v at seq 12", got, tc.msg)
			}
		})
	}
}

// text/plain is stored in 2 bytes and comes back as itself; no content
// type and any other one come back as they were.
func TestEntryShortensTextPlainAndKeepsEveryContentType(t *testing.T) {
	for _, tc := range []struct {
		ct      string
		ctBytes int // what content_type costs in the entry
	}{
		{"text/plain", 2}, {"", 0}, {"text/plain; charset=utf-8", 27}, {"image/png", 11},
	} {
		t.Run(tc.ct, func(t *testing.T) {
			m := &schemas.Message{ClientMsgId: "c1", ConvId: "g", Sender: "a", Kind: schemas.Kind_KIND_MESSAGE,
				ContentType: tc.ct, Body: []byte("hi")}
			raw, err := EncodeEntry(3, 9, m)
			if err != nil {
				t.Fatal(err)
			}
			bare := proto.Clone(m).(*schemas.Message)
			bare.ContentType = ""
			rawBare, err := EncodeEntry(3, 9, bare)
			if err != nil {
				t.Fatal(err)
			}
			if got := len(raw) - len(rawBare); got != tc.ctBytes {
				t.Errorf("content_type %q costs %d bytes, want %d", tc.ct, got, tc.ctBytes)
			}
			got, err := DecodeEntry(raw, "g", 1)
			if err != nil {
				t.Fatal(err)
			}
			if !proto.Equal(got.GetMessage(), m) {
				t.Errorf("decoded %v, want %v", got.GetMessage(), m)
			}
		})
	}
}

// Ids in the forms clients generate are stored as their bytes, under
// field numbers a Message does not have; every other id as given; each
// comes back as it was sent.
func TestEntryPacksTheIdFormsClientsGenerateAndDecodesEveryIdAsSent(t *testing.T) {
	for _, tc := range []struct {
		name, id string
		field    protowire.Number
		idBytes  int // what the id's field costs in the entry
	}{
		{"lowercase UUID", "0b0f6a3e-8f7c-4c1e-9d55-6f1c2d3e4f50", entryFieldPackedUUID, 19},
		{"SDK hex", "9f86d081884c7d659a2feaa0c55ad015", entryFieldPackedHex, 19},
		{"short hex", "00ff", entryFieldPackedHex, 5},
		{"uppercase UUID", "0B0F6A3E-8F7C-4C1E-9D55-6F1C2D3E4F50", entryFieldClientMsgID, 38},
		{"UUID without its last hyphen", "0b0f6a3e-8f7c-4c1e-9d556f1c2d3e4f50a", entryFieldClientMsgID, 38},
		{"odd hex", "abc", entryFieldClientMsgID, 5},
		{"uppercase hex", "9F86D081", entryFieldClientMsgID, 10},
		{"not hex", "web-1", entryFieldClientMsgID, 7},
		{"longest hex", strings.Repeat("ab", schemas.MaxIDBytes/2), entryFieldPackedHex, 3 + schemas.MaxIDBytes/2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := &schemas.Message{ClientMsgId: tc.id, ConvId: "g", Sender: "a", Kind: schemas.Kind_KIND_MESSAGE,
				ContentType: "text/plain", Body: []byte("hi")}
			lead := appendEntryID(nil, tc.id)
			if num, _, _ := protowire.ConsumeTag(lead); num != tc.field || len(lead) != tc.idBytes {
				t.Fatalf("id field is number %d in %d bytes, want %d in %d", num, len(lead), tc.field, tc.idBytes)
			}
			raw, err := EncodeEntry(3, 9, m)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.HasPrefix(raw, append([]byte("3:9:"), lead...)) {
				t.Fatalf("entry %q does not start with its id field %q", raw, lead)
			}
			got, err := DecodeEntry(raw, "g", 1)
			if err != nil {
				t.Fatal(err)
			}
			if !proto.Equal(got.GetMessage(), m) {
				t.Fatalf("decoded %v, want %v", got.GetMessage(), m)
			}
		})
	}
}

// The entry-only field numbers are not the Message's: a reader that does
// not know them skips them, and a new Message field cannot take them.
func TestEntryPackedIdFieldsAreNoFieldsOfAMessage(t *testing.T) {
	fields := (&schemas.Message{}).ProtoReflect().Descriptor().Fields()
	for _, num := range []protowire.Number{entryFieldPackedUUID, entryFieldPackedHex} {
		if f := fields.ByNumber(num); f != nil {
			t.Fatalf("Message has field %d (%s), which entries use for packed ids", num, f.Name())
		}
		if protowire.SizeTag(num) != 2 {
			t.Fatalf("field %d's tag takes %d bytes, want 2", num, protowire.SizeTag(num))
		}
	}
	var m schemas.Message
	raw, err := EncodeEntry(1, 1, &schemas.Message{ClientMsgId: "0b0f6a3e-8f7c-4c1e-9d55-6f1c2d3e4f50", Sender: "a"})
	if err != nil {
		t.Fatal(err)
	}
	if err := proto.Unmarshal(raw[len("1:1:"):], &m); err != nil || m.GetSender() != "a" {
		t.Fatalf("a plain protobuf reader fails on a packed entry: %v (sender %q)", err, m.GetSender())
	}
}

// An entry written before ids were packed (field 1 as given) decodes too.
func TestEntryWrittenBeforeIdsWerePackedDecodes(t *testing.T) {
	m := &schemas.Message{ClientMsgId: "0b0f6a3e-8f7c-4c1e-9d55-6f1c2d3e4f50", ConvId: "g", Sender: "a", Body: []byte("x")}
	got, err := DecodeEntry(legacyEntry(t, 4, 5, m), "g", 1)
	if err != nil || !proto.Equal(got.GetMessage(), m) {
		t.Fatalf("decoded %v (%v), want %v", got.GetMessage(), err, m)
	}
}

// legacyEntry is the entry sequencing wrote before ids were packed.
func legacyEntry(t *testing.T, seq uint64, writeMS int64, m *schemas.Message) []byte {
	t.Helper()
	raw, err := EncodeEntry(seq, writeMS, m)
	if err != nil {
		t.Fatal(err)
	}
	prefix := fmt.Sprintf("%d:%d:", seq, writeMS)
	_, rest, err := unpackEntryID(raw[len(prefix):])
	if err != nil {
		t.Fatal(err)
	}
	out := append([]byte(prefix), protowire.AppendString(protowire.AppendTag(nil, entryFieldClientMsgID, protowire.BytesType), m.GetClientMsgId())...)
	return append(out, rest...)
}
