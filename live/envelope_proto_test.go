package live

import (
	"bytes"
	"reflect"
	"testing"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/offlinebox/offlinebox/schemas"
)

// The hand-written codec and the messages of schemas/offlinebox.proto
// must be one wire format: each is checked against the other here.

func toProto(b Batch) *schemas.LiveBatch {
	out := &schemas.LiveBatch{}
	for _, e := range b.Envelopes {
		pe := &schemas.LiveEnvelope{Kind: e.Kind, Conv: e.Conv, Large: e.Large, Record: e.Record, SentMs: e.SentMS}
		for _, t := range e.Targets {
			pe.Targets = append(pe.Targets, &schemas.LiveTarget{User: t.User, Device: t.Device, Conn: t.Conn, Joined: t.Joined})
		}
		if r := e.Receipt; r != nil {
			pe.Receipt = &schemas.LiveReceipt{Conv: r.Conv, Epoch: r.Epoch, Seq: r.Seq, State: r.State,
				Pushed: int64(r.Pushed), Delivered: int64(r.Delivered), Read: int64(r.Read), Members: int64(r.Members),
				PeerDeliveredSeq: r.PeerDeliveredSeq, PeerReadSeq: r.PeerReadSeq}
		}
		if r := e.Rejected; r != nil {
			pe.Rejected = &schemas.LiveRejected{Conv: r.Conv, ClientMsgId: r.ClientMsgID, Code: r.Code, Reason: r.Reason, AtMs: r.AtMS}
		}
		out.Envelopes = append(out.Envelopes, pe)
	}
	return out
}

func fromProto(pb *schemas.LiveBatch) Batch {
	var b Batch
	for _, pe := range pb.GetEnvelopes() {
		e := Envelope{Kind: pe.GetKind(), Conv: pe.GetConv(), Large: pe.GetLarge(), Record: pe.GetRecord(), SentMS: pe.GetSentMs()}
		for _, t := range pe.GetTargets() {
			e.Targets = append(e.Targets, Target{User: t.GetUser(), Device: t.GetDevice(), Conn: t.GetConn(), Joined: t.GetJoined()})
		}
		if r := pe.GetReceipt(); r != nil {
			e.Receipt = &Receipt{Conv: r.GetConv(), Epoch: r.GetEpoch(), Seq: r.GetSeq(), State: r.GetState(),
				Pushed: int(r.GetPushed()), Delivered: int(r.GetDelivered()), Read: int(r.GetRead()), Members: int(r.GetMembers()),
				PeerDeliveredSeq: r.GetPeerDeliveredSeq(), PeerReadSeq: r.GetPeerReadSeq()}
		}
		if r := pe.GetRejected(); r != nil {
			e.Rejected = &Rejected{Conv: r.GetConv(), ClientMsgID: r.GetClientMsgId(), Code: r.GetCode(), Reason: r.GetReason(), AtMS: r.GetAtMs()}
		}
		b.Envelopes = append(b.Envelopes, e)
	}
	return b
}

// wireCases are batches as Decode gives them back (nil, not empty,
// slices), from the empty batch to records of a few megabytes.
func wireCases() []struct {
	name  string
	batch Batch
} {
	large := bytes.Repeat([]byte("\x0a\x03abc\x12\x01z"), 400_000)
	many := make([]Target, 300)
	for i := range many {
		many[i] = Target{User: "user-" + string(rune('a'+i%26)), Device: "d", Conn: "c", Joined: uint64(i) << 40}
	}
	return []struct {
		name  string
		batch Batch
	}{
		{"no envelopes", Batch{}},
		{"one envelope with every field empty", Batch{Envelopes: []Envelope{{}}}},
		{"empty receipt and rejection, present", Batch{Envelopes: []Envelope{{Kind: KindReceipt, Receipt: &Receipt{}},
			{Kind: KindRejected, Rejected: &Rejected{}}}}},
		{"a target with every field empty", Batch{Envelopes: []Envelope{{Kind: KindKick, Targets: []Target{{}}}}}},
		{"every field set", sampleBatch()},
		{"negative counts and times, int64 on the wire", Batch{Envelopes: []Envelope{{Kind: KindReceipt, SentMS: -1,
			Receipt: &Receipt{Pushed: -1, Delivered: -2, Read: -3, Members: -4}},
			{Kind: KindRejected, Rejected: &Rejected{AtMS: -5}}}}},
		{"largest values", Batch{Envelopes: []Envelope{{Kind: KindPush, SentMS: 1<<63 - 1,
			Targets:  []Target{{User: "u", Joined: 1<<64 - 1}},
			Receipt:  &Receipt{Epoch: 1<<64 - 1, Seq: 1<<64 - 1, PeerDeliveredSeq: 1<<64 - 1, PeerReadSeq: 1<<64 - 1},
			Rejected: &Rejected{AtMS: -1 << 63}}}}},
		{"a record of 3.2 MB", Batch{Envelopes: []Envelope{{Kind: KindPush, Conv: "crew", Record: large}}}},
		{"300 targets", Batch{Envelopes: []Envelope{{Kind: KindPush, Conv: "crew", Targets: many}}}},
		{"non-ASCII strings", Batch{Envelopes: []Envelope{{Kind: KindRejected, Conv: "équipe",
			Rejected: &Rejected{Conv: "équipe", Reason: "trop long: 🚫"}}}}},
	}
}

func TestEncodedBatchesReadAsTheProtoMessagesSay(t *testing.T) {
	for _, tc := range wireCases() {
		t.Run(tc.name, func(t *testing.T) {
			data, err := FormatBinary.Encode(tc.batch)
			if err != nil {
				t.Fatal(err)
			}
			var got schemas.LiveBatch
			if err := proto.Unmarshal(data, &got); err != nil {
				t.Fatalf("the generated code refused what Encode wrote: %v", err)
			}
			if len(got.ProtoReflect().GetUnknown()) > 0 {
				t.Fatalf("Encode wrote fields the messages do not declare: %x", got.ProtoReflect().GetUnknown())
			}
			if want := toProto(tc.batch); !proto.Equal(&got, want) {
				t.Fatalf("the generated code read %v, want %v", &got, want)
			}
			canonical, err := proto.MarshalOptions{Deterministic: true}.Marshal(toProto(tc.batch))
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(data, canonical) {
				t.Fatalf("Encode wrote %d bytes unlike the generated code's %d", len(data), len(canonical))
			}
		})
	}
}

func TestBatchesTheGeneratedCodeWritesDecodeAsSent(t *testing.T) {
	for _, tc := range wireCases() {
		t.Run(tc.name, func(t *testing.T) {
			data, err := proto.Marshal(toProto(tc.batch))
			if err != nil {
				t.Fatal(err)
			}
			got, err := Decode(data)
			if err != nil {
				t.Fatalf("Decode refused what the generated code wrote: %v", err)
			}
			if !reflect.DeepEqual(got, tc.batch) {
				t.Fatalf("decoded %+v, want %+v", got, tc.batch)
			}
			if back := fromProto(toProto(tc.batch)); !reflect.DeepEqual(back, tc.batch) {
				t.Fatalf("the test's conversion loses something: %+v", back)
			}
		})
	}
}

// Every field of the messages is set in some case, so that a field added
// to the .proto without the codec fails the tests above.
func TestTheWireCasesSetEveryFieldOfTheMessages(t *testing.T) {
	seen := map[protoreflect.FullName]bool{}
	var walk func(m protoreflect.Message)
	walk = func(m protoreflect.Message) {
		m.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
			seen[fd.FullName()] = true
			switch {
			case fd.IsList() && fd.Message() != nil:
				for i := range v.List().Len() {
					walk(v.List().Get(i).Message())
				}
			case fd.Message() != nil:
				walk(v.Message())
			}
			return true
		})
	}
	for _, tc := range wireCases() {
		walk(toProto(tc.batch).ProtoReflect())
	}
	for _, m := range []proto.Message{&schemas.LiveBatch{}, &schemas.LiveEnvelope{}, &schemas.LiveTarget{},
		&schemas.LiveReceipt{}, &schemas.LiveRejected{}} {
		fds := m.ProtoReflect().Descriptor().Fields()
		for i := range fds.Len() {
			if !seen[fds.Get(i).FullName()] {
				t.Errorf("no case sets %s", fds.Get(i).FullName())
			}
		}
	}
}
