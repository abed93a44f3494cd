package main

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/offlinebox/offlinebox/client"
	"github.com/offlinebox/offlinebox/workers/expiry"
)

// TestSDKDeviceCatchesUpLoadsHistoryAndMatchesWhatItSent runs the Go SDK
// against the real API: a device whose conversation's oldest messages
// left the Redis window catches up (the gap from its cursor is
// incomplete), loads the rest through history, and ends holding every
// message once in seq order; a message it sends comes back with its seq
// and leaves the sending table.
func TestSDKDeviceCatchesUpLoadsHistoryAndMatchesWhatItSent(t *testing.T) {
	const conv, old, recent = "dm-alice-bob", 120, 80
	r := newRoamingRig(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	r.now.Store(time.Now().Add(-40 * 24 * time.Hour).UnixMilli())
	r.send(t, conv, 1, old)
	waitUntil(t, "old messages sunk", func() (bool, error) { // written 40 days ago
		n, err := r.ch.CountMessages(ctx, conv)
		return n == old, err
	})
	r.now.Store(time.Now().UnixMilli())
	r.send(t, conv, old+1, recent)
	waitUntil(t, "every message sunk", func() (bool, error) {
		n, err := r.ch.CountMessages(ctx, conv)
		return n == old+recent, err
	})
	ex, err := expiry.New(expiry.Config{Clock: func() time.Time { return time.UnixMilli(r.now.Load()) }}, r.store, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ex.SweepOnce(ctx); err != nil {
		t.Fatal(err)
	}

	d, err := client.Open(ctx, client.Options{Base: r.base, Token: mintFor(t, "alice"),
		Path: filepath.Join(t.TempDir(), "alice.db"), Limit: 50, PageLimit: 30})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	rep, err := d.CatchUp(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if n, _ := d.Store().Count(ctx, conv); n != recent || rep.Incomplete == 0 {
		t.Fatalf("after catch-up the device holds %d (report %+v), want the %d in the window and an incomplete gap", n, rep, recent)
	}
	for range 10 {
		o, err := d.LoadOlder(ctx, conv, 50)
		if err != nil {
			t.Fatal(err)
		}
		if o.Start {
			break
		}
	}
	held, err := d.Store().Messages(ctx, conv, 0, 1000)
	if err != nil {
		t.Fatal(err)
	}
	if len(held) != old+recent {
		t.Fatalf("the device holds %d messages, want %d", len(held), old+recent)
	}
	for i, m := range held {
		if m.Seq != uint64(i+1) || string(m.Body) != fmt.Sprint("message ", i+1) {
			t.Fatalf("message %d held is seq %d %q", i, m.Seq, m.Body)
		}
	}

	id, err := d.Send(ctx, client.Outgoing{ConvID: conv, ConvType: "direct", Recipients: []string{"bob"},
		ContentType: "text/plain", Body: []byte("back from holiday")})
	if err != nil {
		t.Fatal(err)
	}
	waitUntil(t, "the sent message back with its seq", func() (bool, error) {
		if _, err := d.CatchUp(ctx); err != nil {
			return false, err
		}
		p, err := d.Pending(ctx)
		return len(p) == 0, err
	})
	last, err := d.Store().Messages(ctx, conv, 0, 1)
	if err != nil {
		t.Fatal(err)
	}
	if len(last) != 1 || last[0].ClientMsgID != id || last[0].Seq != old+recent+1 || last[0].Sender != "alice" {
		t.Fatalf("newest held %+v, want %s from alice at seq %d", last, id, old+recent+1)
	}
}
