package api

import (
	"context"
	"encoding/base64"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	obclient "github.com/offlinebox/offlinebox/client"
	"github.com/offlinebox/offlinebox/live"
)

// typingPair is a group {alice, bob} with both connected on node 0.
func typingPair(t *testing.T, cfg Config) (*liveEnv, *device, *device) {
	t.Helper()
	le := newLiveEnv(t, cfg)
	le.produce(founding("team", "alice", "bob"))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	alice, bob := le.device(0, "alice", "phone"), le.device(0, "bob", "phone")
	eventually(t, "the group is sequenced", func() (bool, string) {
		got, _, err := bob.http.Sync(ctx, obclient.SyncRequest{})
		return err == nil && len(got.Conversations) == 1, ""
	})
	alice.connect()
	bob.connect()
	return le, alice, bob
}

// TestTypingOfTheWrongShapeIsRefusedNamingTheField: a 4 KiB body and a
// content type off the allow-list answer an error frame naming the field,
// and reach nobody.
func TestTypingOfTheWrongShapeIsRefusedNamingTheField(t *testing.T) {
	_, alice, bob := typingPair(t, Config{})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, tc := range []struct{ name, frame, field string }{
		{"a 4 KiB body", `{"type":"typing","conv_id":"team","body":"` + base64.StdEncoding.EncodeToString(make([]byte, 4096)) + `"}`, "body"},
		{"a content type of the client's choice", `{"type":"typing","conv_id":"team","content_type":"text/html"}`, "content_type"},
	} {
		if err := alice.live.SendRaw(ctx, []byte(tc.frame)); err != nil {
			t.Fatal(err)
		}
		f := alice.until("error", func(obclient.Frame) bool { return true })
		if f.Field != tc.field || f.Code == "" {
			t.Fatalf("%s: answered %s, want an error naming %s", tc.name, f.Raw, tc.field)
		}
	}
	for _, g := range bob.quiet(300*time.Millisecond, "ping", "message") {
		t.Errorf("bob got %s from refused typing", g.Raw)
	}
}

// TestATypingFloodIsCutToTheBudgetAndAMessageStillArrivesPromptly: 100
// typing frames at once reach bob as the connection's burst (5) and its
// rate; a message sent during the flood reaches bob about as fast as one
// sent without it.
func TestATypingFloodIsCutToTheBudgetAndAMessageStillArrivesPromptly(t *testing.T) {
	cfg := Config{}
	cfg.Live.EphemeralMaxDrops = 1000 // counted, not closed
	_, alice, bob := typingPair(t, cfg)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// send sends a message and reads bob's frames until it arrived,
	// counting the typing frames among them.
	typing := 0
	send := func(id string) time.Duration {
		t.Helper()
		start := time.Now()
		if err := alice.http.Send(ctx, obclient.Outgoing{ClientMsgID: id, ConvID: "team", ConvType: "group",
			ContentType: "text/plain", Body: []byte(id)}); err != nil {
			t.Fatal(err)
		}
		for {
			f := bob.nextAny(10 * time.Second)
			if f.Type == "ephemeral" {
				typing++
			}
			if f.Type == "message" && f.Message != nil && f.Message.ClientMsgID == id {
				return time.Since(start)
			}
		}
	}
	calm := send("calm-1")
	start := time.Now()
	for i := 0; i < 100; i++ {
		if err := alice.live.Typing(ctx, "team"); err != nil {
			t.Fatal(err)
		}
	}
	during := send("flood-1")
	for _, f := range bob.quiet(time.Second, "ping", "message") {
		if f.Type == "ephemeral" {
			typing++
		}
	}
	elapsed := time.Since(start).Seconds()
	if most := live.DefaultLiveEphemeralConnBurst + int(live.DefaultLiveEphemeralConnRate*elapsed) + 1; typing < live.DefaultLiveEphemeralConnBurst || typing > most {
		t.Fatalf("bob got %d typing frames of 100 in %.1fs, want %d to %d", typing, elapsed, live.DefaultLiveEphemeralConnBurst, most)
	}
	t.Logf("message latency: %s calm, %s during the flood; %d of 100 typing frames passed", calm, during, typing)
	if during > calm+500*time.Millisecond && during > time.Second {
		t.Fatalf("a message during the flood took %s, against %s without", during, calm)
	}
}

// TestAPersistentTypingFlooderIsClosedWithTheDocumentedCode.
func TestAPersistentTypingFlooderIsClosedWithTheDocumentedCode(t *testing.T) {
	_, alice, bob := typingPair(t, Config{})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for i := 0; i < live.DefaultLiveEphemeralConnBurst+live.DefaultLiveEphemeralMaxDrops+10; i++ {
		if err := alice.live.Typing(ctx, "team"); err != nil {
			break // closed already
		}
	}
	waitClosed(t, alice, int(live.CloseEphemeralFlood))
	if bob.live.Err() != nil {
		t.Fatalf("bob's connection ended: %v", bob.live.Err())
	}
}

// TestEveryCloseCodeIsDocumented: asyncapi.yaml names each close code the
// server sends.
func TestEveryCloseCodeIsDocumented(t *testing.T) {
	data, err := os.ReadFile("asyncapi.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, code := range []int{int(live.CloseReplaced), int(live.CloseSlowConsumer), int(live.CloseHeartbeat), int(live.CloseUnauthorized),
		int(live.CloseBadFrame), int(live.CloseEphemeralFlood), int(live.CloseGoingAway)} {
		if !strings.Contains(string(data), fmt.Sprintf("      %d ", code)) {
			t.Errorf("close code %d is not in asyncapi.yaml's list", code)
		}
	}
}
