package expiry

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/offlinebox/offlinebox/redisstore"
	"github.com/offlinebox/offlinebox/retention"
	"github.com/offlinebox/offlinebox/schemas"
)

const legalHoldPolicy = `defaults:
  inbox: 30d
  history: 365d
policies:
  - name: legal-hold
    match: {tag: legal}
    audit_hold: 7y
`

func TestTheSweepNeverDeletesBelowTheConfirmedHorizon(t *testing.T) {
	f := newPolicyFixture(t)
	ctx := context.Background()
	g := schemas.ConvType_CONV_TYPE_GROUP
	// A legal group: its join and a message 400 days ago (a month the
	// defaults' 365 days drop whole), a message 40 days ago.
	f.send(t, &schemas.Message{ConvId: "legal-1", ConvType: g, Kind: schemas.Kind_KIND_MEMBER_JOIN,
		Recipients: []string{"alice", "bob"}, Tag: "legal"}, 400*day)
	f.send(t, &schemas.Message{ConvId: "legal-1", ConvType: g, ContentType: "text/plain", Body: []byte("q1")}, 400*day)
	f.send(t, &schemas.Message{ConvId: "legal-1", ConvType: g, ContentType: "text/plain", Body: []byte("q4")}, 40*day)
	// The process runs with the defaults alone (an empty file once put in
	// force, a process started without its file); the 7-year hold was
	// confirmed.
	defaults, err := retention.Parse("defaults.yaml", []byte("defaults:\n  inbox: 30d\n  history: 365d\n"))
	if err != nil {
		t.Fatal(err)
	}
	confirmed, err := retention.Parse("p.yaml", []byte(legalHoldPolicy))
	if err != nil {
		t.Fatal(err)
	}
	if err := f.store.ConfirmRetention(ctx, redisstore.ConfirmedRetention{Policy: []byte(legalHoldPolicy),
		Digest: confirmed.Digest, Source: "p.yaml", How: "start", At: f.now}); err != nil {
		t.Fatal(err)
	}
	clock := f.now
	w, err := New(Config{Policies: retention.Fixed(defaults), Clock: func() time.Time { return clock }}, f.store, f.ch)
	if err != nil {
		t.Fatal(err)
	}
	f.expireAt(t, w)
	if _, h := f.seqs(t, "legal-1"); !slices.Equal(h, []uint64{1, 2, 3}) {
		t.Fatalf("history holds %v of legal-1 after the sweep, want 1 2 3: the confirmed hold keeps them", h)
	}
	if v := counterValue(t, w.m.removed.WithLabelValues(whatPartitions)); v != 0 {
		t.Fatalf("%v partitions dropped under the confirmed 7-year hold", v)
	}
	// Without the confirmed policy the same sweep deletes them: the floor
	// is what kept them.
	if err := f.store.Client().Del(ctx, f.store.Keys().RetentionConfirmed()).Err(); err != nil {
		t.Fatal(err)
	}
	clock = clock.Add(time.Hour)
	f.expireAt(t, w)
	if _, h := f.seqs(t, "legal-1"); slices.Contains(h, 1) || slices.Contains(h, 2) {
		t.Fatalf("history holds %v of legal-1 with nothing confirmed: the defaults' 365 days delete seqs 1 and 2", h)
	}
}

func TestASweepThatCannotReadTheConfirmedPolicyDeletesNothing(t *testing.T) {
	f := newPolicyFixture(t)
	ctx := context.Background()
	if err := f.store.Client().Set(ctx, f.store.Keys().RetentionConfirmed(), "x", 0).Err(); err != nil {
		t.Fatal(err)
	}
	w, err := New(Config{}, f.store, f.ch)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.SweepOnce(ctx); err == nil {
		t.Fatal("a sweep ran without its floor")
	}
	if _, err := w.DropHistory(ctx); err == nil {
		t.Fatal("a partition drop ran without its floor")
	}
}
