package live

import (
	"reflect"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/offlinebox/offlinebox/schemas"
)

func sampleBatch() Batch {
	return Batch{Envelopes: []Envelope{
		{Kind: KindPush, Conv: "crew", Large: true, Record: []byte("\x0a\x03abc"), SentMS: 1700000000123,
			Targets: []Target{{User: "ann", Device: "phone", Conn: "c1", Joined: 7}, {User: "bob", Device: "pc", Conn: "c2"}}},
		{Kind: KindReceipt, Receipt: &Receipt{Conv: "crew", Epoch: 2, Seq: 9, State: "read", Pushed: 3, Delivered: 2,
			Read: 1, Members: 4, PeerDeliveredSeq: 8, PeerReadSeq: 7}},
		{Kind: KindRejected, Rejected: &Rejected{Conv: "crew", ClientMsgID: "m1", Code: "too_large", Reason: "no", AtMS: 5}},
		{Kind: KindKick, Targets: []Target{{User: "ann", Device: "phone", Conn: "c0"}}},
	}}
}

func TestEnvelopesDecodeAsTheyWereSentInEitherForm(t *testing.T) {
	want := sampleBatch()
	bin, err := FormatBinary.Encode(want)
	if err != nil {
		t.Fatal(err)
	}
	old, err := encodeJSON(want)
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		data []byte
	}{
		{"binary, what publishers send once an operator turns it on", bin},
		{"JSON, what a publisher not upgraded yet sends", old},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Decode(tc.data)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("decoded %+v, want %+v", got, want)
			}
		})
	}
	if len(bin) == 0 || bin[0] == '{' {
		t.Fatalf("a binary batch starts with %q: Decode would read it as JSON", bin[:1])
	}
}

func TestMalformedBinaryBatchIsRefused(t *testing.T) {
	bin, _ := FormatBinary.Encode(sampleBatch())
	if _, err := Decode(bin[:len(bin)-3]); err == nil {
		t.Fatal("a cut batch decoded")
	}
}

func BenchmarkEnvelope(b *testing.B) {
	batch := sampleBatch()
	bin, _ := FormatBinary.Encode(batch)
	old, _ := encodeJSON(batch)
	b.Run("encode/json", func(b *testing.B) {
		b.ReportAllocs()
		for range b.N {
			_, _ = encodeJSON(batch)
		}
	})
	b.Run("encode/binary", func(b *testing.B) {
		b.ReportAllocs()
		for range b.N {
			_, _ = FormatBinary.Encode(batch)
		}
	})
	// The generated code's figures count the conversion to and from the
	// live types, which a codec built on it would pay.
	b.Run("encode/generated", func(b *testing.B) {
		b.ReportAllocs()
		for range b.N {
			_, _ = proto.Marshal(toProto(batch))
		}
	})
	b.Run("decode/json", func(b *testing.B) {
		b.ReportAllocs()
		for range b.N {
			_, _ = Decode(old)
		}
	})
	b.Run("decode/binary", func(b *testing.B) {
		b.ReportAllocs()
		for range b.N {
			_, _ = Decode(bin)
		}
	})
	b.Run("decode/generated", func(b *testing.B) {
		b.ReportAllocs()
		for range b.N {
			var pb schemas.LiveBatch
			_ = proto.Unmarshal(bin, &pb)
			_ = fromProto(&pb)
		}
	})
}

func TestDecodedStringsOutliveThePayloadAndRecordsAliasIt(t *testing.T) {
	want := sampleBatch()
	data, _ := FormatBinary.Encode(want)
	got, err := Decode(data)
	if err != nil {
		t.Fatal(err)
	}
	clear(data)
	for i := range want.Envelopes {
		w, g := want.Envelopes[i], got.Envelopes[i]
		w.Record, g.Record = nil, nil
		if !reflect.DeepEqual(g, w) {
			t.Errorf("envelope %d changed with the payload: %+v, want %+v", i, g, w)
		}
	}
	if r := got.Envelopes[0].Record; len(r) == 0 || r[0] != 0 {
		t.Fatalf("the record %q does not alias the payload", r)
	}
	// An append to one envelope's targets must not reach another's.
	got.Envelopes[0].Targets = append(got.Envelopes[0].Targets, Target{User: "eve"})
	if u := got.Envelopes[3].Targets[0].User; u != "ann" {
		t.Fatalf("an append to envelope 0's targets overwrote envelope 3's: %q", u)
	}
}
