package api

import (
	"context"
	"encoding/json"
	"os"
	"sort"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"

	obclient "github.com/offlinebox/offlinebox/client"
)

type asyncDoc struct {
	Components struct {
		Messages map[string]struct {
			Payload struct {
				Required   []string       `yaml:"required"`
				Properties map[string]any `yaml:"properties"`
			} `yaml:"payload"`
		} `yaml:"messages"`
	} `yaml:"components"`
}

// TestLiveFramesAreTheOnesAsyncAPIDocuments drives every kind of frame the
// server sends and checks each against asyncapi.yaml: a documented type,
// every required field there, no field the document does not name.
func TestLiveFramesAreTheOnesAsyncAPIDocuments(t *testing.T) {
	data, err := os.ReadFile("asyncapi.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var doc asyncDoc
	if err := yaml.Unmarshal(data, &doc); err != nil {
		t.Fatalf("asyncapi.yaml does not parse: %v", err)
	}
	le := newLiveEnv(t, Config{})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	le.produce(textMsg(liveDM, "dm-1", "alice", toPeer("bob")))
	alice := le.device(0, "alice", "phone")
	bob := le.device(1, "bob", "phone")
	eventually(t, "the conversation exists", func() (bool, string) {
		got, _, err := bob.http.Sync(ctx, obclient.SyncRequest{})
		return err == nil && len(got.Conversations) == 1, ""
	})
	var frames []obclient.Frame
	h, n := alice.connect()
	frames = append(frames, h, n)
	h, n = bob.connect()
	frames = append(frames, h, n)
	le.produce(textMsg(liveDM, "dm-2", "alice", toPeer("bob")))
	m := bob.until("message", func(f obclient.Frame) bool { return f.Message.ClientMsgID == "dm-2" })
	frames = append(frames, m)
	if err := bob.live.Ack(ctx, []obclient.AckItem{{ConvID: liveDM, Seq: m.Message.Seq, Epoch: m.Message.Epoch}}, true); err != nil {
		t.Fatal(err)
	}
	frames = append(frames, bob.until("acked", func(obclient.Frame) bool { return true }))
	frames = append(frames, alice.until("receipt", func(obclient.Frame) bool { return true }))
	if err := alice.live.Typing(ctx, liveDM); err != nil {
		t.Fatal(err)
	}
	frames = append(frames, bob.until("ephemeral", func(obclient.Frame) bool { return true }))
	for _, raw := range []string{`{"type":"ping"}`, `{"type":"dance"}`} {
		if err := bob.live.SendRaw(ctx, []byte(raw)); err != nil {
			t.Fatal(err)
		}
	}
	frames = append(frames, bob.until("pong", func(obclient.Frame) bool { return true }))
	frames = append(frames, bob.until("error", func(obclient.Frame) bool { return true }))

	seen := map[string]bool{}
	for _, f := range frames {
		seen[f.Type] = true
		spec, ok := doc.Components.Messages[f.Type]
		if !ok {
			t.Errorf("frame type %q is not documented: %s", f.Type, f.Raw)
			continue
		}
		var fields map[string]json.RawMessage
		if err := json.Unmarshal(f.Raw, &fields); err != nil {
			t.Fatal(err)
		}
		for _, r := range spec.Payload.Required {
			if _, ok := fields[r]; !ok {
				t.Errorf("%s frame lacks required %q: %s", f.Type, r, f.Raw)
			}
		}
		for k := range fields {
			if _, ok := spec.Payload.Properties[k]; !ok {
				t.Errorf("%s frame has undocumented field %q: %s", f.Type, k, f.Raw)
			}
		}
	}
	var types []string
	for ty := range seen {
		types = append(types, ty)
	}
	sort.Strings(types)
	if len(types) != 8 {
		t.Errorf("the test saw frames %v, want hello notice message acked receipt ephemeral pong error", types)
	}
}
