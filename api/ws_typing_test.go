package api

import (
	"context"
	"testing"
	"time"

	obclient "github.com/offlinebox/offlinebox/client"
)

// TestTypingReachesEveryOnlineMemberOnceAndIsNeverStored: QoS 0 lives on
// the socket only.
func TestTypingReachesEveryOnlineMemberOnceAndIsNeverStored(t *testing.T) {
	le := newLiveEnv(t, Config{})
	le.produce(founding("team", "alice", "bob", "carol"))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	bob := le.device(0, "bob", "phone")
	eventually(t, "the group is sequenced", func() (bool, string) {
		got, _, err := bob.http.Sync(ctx, obclient.SyncRequest{})
		return err == nil && len(got.Conversations) == 1, ""
	})
	alice := le.device(0, "alice", "phone")
	carol := le.device(1, "carol", "laptop")
	for _, d := range []*device{alice, bob, carol} {
		d.connect()
	}
	if err := alice.live.Typing(ctx, "team"); err != nil {
		t.Fatal(err)
	}
	for _, d := range []*device{bob, carol} {
		f := d.until("ephemeral", func(obclient.Frame) bool { return true })
		if f.Message == nil || f.Message.Sender != "alice" || f.Message.ConvID != "team" || f.Message.Seq != 0 {
			t.Fatalf("%s got %s", d.user, f.Raw)
		}
		for _, g := range d.quiet(500*time.Millisecond, "ping", "message") { // the join may be pushed late
			t.Errorf("%s got a second frame %s", d.user, g.Raw)
		}
	}
	// The join's receipts reach its sender when the join is pushed late.
	for _, g := range alice.quiet(200*time.Millisecond, "ping", "message", "receipt") {
		t.Errorf("the typing user got %s", g.Raw)
	}
	got, _, err := bob.http.Sync(ctx, obclient.SyncRequest{})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range got.Conversations {
		if c.MaxSeq != 1 || len(c.Messages) != 1 || c.Messages[0].Kind != "member_join" {
			t.Fatalf("sync holds %+v, want the creation notice alone", c)
		}
	}
	page, _, err := bob.http.PageBefore(ctx, "team", 0, 50)
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Messages) != 1 || page.MaxSeq != 1 {
		t.Fatalf("the timeline holds %+v, want the creation notice alone", page)
	}
}
