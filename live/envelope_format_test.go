package live

import (
	"context"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/offlinebox/offlinebox/internal/livecompat"
	"github.com/offlinebox/offlinebox/internal/testenv"
	"github.com/offlinebox/offlinebox/redisstore"
)

func TestFormatsParseByNameAndAnUnknownOneIsRefusedByName(t *testing.T) {
	for _, tc := range []struct {
		in      string
		want    Format
		wantErr bool
	}{
		{"", FormatJSON, false},
		{"json", FormatJSON, false},
		{"binary", FormatBinary, false},
		{"protobuf", "", true},
		{"JSON", "", true},
	} {
		got, err := ParseFormat(tc.in)
		if tc.wantErr {
			if err == nil || !strings.Contains(err.Error(), `"`+tc.in+`"`) {
				t.Errorf("ParseFormat(%q) = %q, %v; want an error naming it", tc.in, got, err)
			}
			checkRefusesEveryPublish(t, NewBusFormat(nil, time.Second, Format(tc.in)))
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("ParseFormat(%q) = %q, %v; want %q", tc.in, got, err, tc.want)
		}
	}
	if b := NewBus(nil, time.Second); b.Format() != FormatJSON {
		t.Fatalf("NewBus publishes %q, want JSON until an operator turns binary on", b.Format())
	}
}

// checkRefusesEveryPublish: a bus of an unknown format publishes nothing
// (its client is nil: a publish that got as far as Redis would panic).
func checkRefusesEveryPublish(t *testing.T, b *Bus) {
	t.Helper()
	ctx := context.Background()
	batch := sampleBatch()
	_, one := b.PublishBatch(ctx, "ch", batch)
	many := b.PublishBatches(ctx, map[string]*Batch{"ch": &batch})
	_, unchanged := b.PublishUnchanged(ctx, redisstore.Keys{}, []ChannelBatch{{Conv: "g", Batch: batch}})
	for name, err := range map[string]error{"PublishBatch": one, "PublishBatches": many, "PublishUnchanged": unchanged} {
		if err == nil || !strings.Contains(err.Error(), string(b.Format())) {
			t.Errorf("%s in format %q: %v, want an error naming the format", name, b.Format(), err)
		}
	}
}

// fromPrevious is what a node of the release before the binary form read,
// in this release's types, to compare with what was sent.
func fromPrevious(o livecompat.Batch) Batch {
	var b Batch
	for _, e := range o.Envelopes {
		n := Envelope{Kind: e.Kind, Conv: e.Conv, Large: e.Large, Record: e.Record, SentMS: e.SentMS}
		for _, t := range e.Targets {
			n.Targets = append(n.Targets, Target(t))
		}
		if e.Receipt != nil {
			r := Receipt(*e.Receipt)
			n.Receipt = &r
		}
		if e.Rejected != nil {
			r := Rejected(*e.Rejected)
			n.Rejected = &r
		}
		b.Envelopes = append(b.Envelopes, n)
	}
	return b
}

func TestTheDefaultFormatIsReadByNodesOfTheReleaseBeforeTheBinaryForm(t *testing.T) {
	want := sampleBatch()
	encoders := map[string]func(Batch) ([]byte, error){
		"Encode": Encode, "the zero Format": Format("").Encode, "FormatJSON": FormatJSON.Encode,
	}
	for name, encode := range encoders {
		data, err := encode(want)
		if err != nil {
			t.Fatal(err)
		}
		old, err := livecompat.Decode(data)
		if err != nil {
			t.Fatalf("%s: a node not upgraded refused it: %v", name, err)
		}
		if got := fromPrevious(old); !reflect.DeepEqual(got, want) {
			t.Fatalf("%s: a node not upgraded read %+v, want %+v", name, got, want)
		}
	}
	bin, _ := FormatBinary.Encode(want)
	if _, err := livecompat.Decode(bin); err == nil {
		t.Fatal("a node not upgraded read a binary batch: the check above proves nothing")
	}
}

// TestBusPublishesInItsFormatOnEveryPath: whichever way a batch is
// published (one channel, many, checked against its audience), a JSON
// bus's payload is read by a node of the release before the binary form,
// and a binary bus's by this release's Decode (and not by the old node).
func TestBusPublishesInItsFormatOnEveryPath(t *testing.T) {
	rdb, prefix := testenv.Redis(t)
	s, err := redisstore.New(rdb, redisstore.Config{Prefix: prefix})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	keys := s.Keys()
	if err := rdb.HSet(ctx, keys.ConvMeta("g"), "mver", 2).Err(); err != nil {
		t.Fatal(err)
	}
	want := sampleBatch()
	paths := map[string]func(*Bus) error{
		"PublishBatch": func(b *Bus) error { _, err := b.PublishBatch(ctx, keys.NodeChannel("n1"), want); return err },
		"PublishBatches": func(b *Bus) error {
			return b.PublishBatches(ctx, map[string]*Batch{keys.NodeChannel("n1"): &want})
		},
		"PublishUnchanged": func(b *Bus) error {
			_, err := b.PublishUnchanged(ctx, keys, []ChannelBatch{{Conv: "g", Audience: redisstore.PushAudience{Version: 2}, Batch: want}})
			return err
		},
	}
	for _, format := range []Format{FormatJSON, FormatBinary} {
		bus := NewBusFormat(rdb, 5*time.Second, format)
		sub := bus.Subscribe(ctx, 4)
		t.Cleanup(sub.Close)
		if err := sub.Add(ctx, keys.NodeChannel("n1"), keys.ConvChannel("g")); err != nil {
			t.Fatal(err)
		}
		for name, publish := range paths {
			if err := publish(bus); err != nil {
				t.Fatalf("%s %s: %v", format, name, err)
			}
			var data []byte
			select {
			case data = <-sub.Messages():
			case <-time.After(5 * time.Second):
				t.Fatalf("%s %s: nothing arrived", format, name)
			}
			checkReadAs(t, format, name, data, want)
		}
	}
}

func checkReadAs(t *testing.T, format Format, path string, data []byte, want Batch) {
	t.Helper()
	old, oldErr := livecompat.Decode(data)
	if format == FormatJSON {
		if oldErr != nil {
			t.Fatalf("%s %s: a node not upgraded refused it: %v", format, path, oldErr)
		}
		if got := fromPrevious(old); !reflect.DeepEqual(got, want) {
			t.Fatalf("%s %s: a node not upgraded read %+v, want %+v", format, path, got, want)
		}
		return
	}
	if oldErr == nil {
		t.Fatalf("%s %s: the payload is JSON", format, path)
	}
	got, err := Decode(data)
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("%s %s: decoded %+v, %v; want %+v", format, path, got, err, want)
	}
}
