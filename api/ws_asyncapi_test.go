package api

import (
	"context"
	"encoding/json"
	"fmt"
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

func readAsyncDoc() (asyncDoc, error) {
	var doc asyncDoc
	data, err := os.ReadFile("asyncapi.yaml")
	if err != nil {
		return doc, err
	}
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return doc, fmt.Errorf("asyncapi.yaml does not parse: %w", err)
	}
	return doc, nil
}

// check reports how f departs from the document: a type it does not
// name, a required field missing, a field it does not name.
func (doc asyncDoc) check(f obclient.Frame) []string {
	spec, ok := doc.Components.Messages[f.Type]
	if !ok {
		return []string{fmt.Sprintf("frame type %q is not documented: %s", f.Type, f.Raw)}
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(f.Raw, &fields); err != nil {
		return []string{fmt.Sprintf("%s frame is not a JSON object: %s", f.Type, f.Raw)}
	}
	var problems []string
	for _, r := range spec.Payload.Required {
		if _, ok := fields[r]; !ok {
			problems = append(problems, fmt.Sprintf("%s frame lacks required %q: %s", f.Type, r, f.Raw))
		}
	}
	for k := range fields {
		if _, ok := spec.Payload.Properties[k]; !ok {
			problems = append(problems, fmt.Sprintf("%s frame has undocumented field %q: %s", f.Type, k, f.Raw))
		}
	}
	return problems
}

// checkSeenFrames checks the frames every test that ran received
// (seenFrames) against asyncapi.yaml, once they all ran: those of the
// catch-ups, relists and bounds too, which the test above does not
// drive. It returns the exit code.
func checkSeenFrames() int {
	doc, err := readAsyncDoc()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	code := 0
	for _, frames := range seenFrames {
		for _, f := range frames {
			for _, p := range doc.check(f) {
				fmt.Fprintln(os.Stderr, "a frame the tests received departs from asyncapi.yaml:", p)
				code = 1
			}
		}
	}
	return code
}

// TestLiveFramesAreTheOnesAsyncAPIDocuments drives every kind of frame the
// server sends and checks each against asyncapi.yaml: a documented type,
// every required field there, no field the document does not name.
func TestLiveFramesAreTheOnesAsyncAPIDocuments(t *testing.T) {
	doc, err := readAsyncDoc()
	if err != nil {
		t.Fatal(err)
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
		for _, p := range doc.check(f) {
			t.Error(p)
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
