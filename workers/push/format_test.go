package push

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/offlinebox/offlinebox/internal/livecompat"
	"github.com/offlinebox/offlinebox/live"
	"github.com/offlinebox/offlinebox/schemas"
)

func TestConfigTakesTheBusFormatsAndNamesTheFieldOfAnUnknownOne(t *testing.T) {
	for _, tc := range []struct {
		format  live.Format
		wantErr bool
	}{
		{"", false}, {live.FormatJSON, false}, {live.FormatBinary, false}, {"protobuf", true},
	} {
		err := Config{BusFormat: tc.format}.Validate()
		if tc.wantErr != (err != nil) {
			t.Errorf("BusFormat %q: %v, want an error: %v", tc.format, err, tc.wantErr)
		}
		if err != nil && (!strings.Contains(err.Error(), "BusFormat") || !strings.Contains(err.Error(), string(tc.format))) {
			t.Errorf("BusFormat %q: %q names neither the field nor the value", tc.format, err)
		}
	}
	if got := (Config{}).withDefaults().BusFormat; got != live.FormatJSON {
		t.Fatalf("the default bus format is %q, want JSON until every API node reads binary", got)
	}
}

// TestThePusherPublishesInItsBusFormat: by name to a node (a membership
// new to the stage) and on the conversation's channel (resolved before),
// a pusher left at the default publishes what an API node of the release
// before the binary form reads, and one set to binary what this release
// reads.
func TestThePusherPublishesInItsBusFormat(t *testing.T) {
	for _, format := range []live.Format{"", live.FormatBinary} {
		t.Run(fmt.Sprintf("format %q", format), func(t *testing.T) {
			f := newFixture(t)
			p, err := New(Config{Store: f.store.Config(), BusFormat: format, Metrics: prometheus.NewRegistry()}, f.store.Client())
			if err != nil {
				t.Fatal(err)
			}
			f.p = p
			ctx := context.Background()
			if err := f.sub.Add(ctx, f.store.Keys().ConvChannel("team")); err != nil {
				t.Fatal(err)
			}
			f.sequence(group("team", "alice", schemas.Kind_KIND_MEMBER_JOIN, "alice", "bob"))
			f.online("bob", "phone", "a")
			for round, want := range []struct {
				targets int
				how     string
			}{{1, "by name"}, {0, "on the channel"}} {
				m := group("team", "alice", schemas.Kind_KIND_MESSAGE)
				m.ClientMsgId += fmt.Sprint(round)
				if _, err := f.p.Handle(ctx, []*kgo.Record{f.sequence(m)}); err != nil {
					t.Fatal(err)
				}
				envs := f.payloadsIn(format, 300*time.Millisecond)
				if len(envs) != 1 || envs[0].Conv != "team" || len(envs[0].Targets) != want.targets {
					t.Fatalf("round %d: read %+v, want one envelope of team %s", round, envs, want.how)
				}
			}
		})
	}
}

// payloadsIn reads what arrived within wait as a reader of its format
// does: JSON by a node of the release before the binary form, binary by
// this release (and never by that node).
func (f *fixture) payloadsIn(format live.Format, wait time.Duration) []livecompat.Envelope {
	f.t.Helper()
	var out []livecompat.Envelope
	deadline := time.After(wait)
	for {
		select {
		case data := <-f.sub.Messages():
			old, oldErr := livecompat.Decode(data)
			if format != live.FormatBinary {
				if oldErr != nil {
					f.t.Fatalf("a node not upgraded refused a payload: %v", oldErr)
				}
				out = append(out, old.Envelopes...)
				continue
			}
			if oldErr == nil {
				f.t.Fatal("a binary pusher published JSON")
			}
			b, err := live.Decode(data)
			if err != nil {
				f.t.Fatal(err)
			}
			for _, e := range b.Envelopes {
				out = append(out, livecompat.Envelope{Kind: e.Kind, Conv: e.Conv, Targets: make([]livecompat.Target, len(e.Targets))})
			}
		case <-deadline:
			return out
		}
	}
}
