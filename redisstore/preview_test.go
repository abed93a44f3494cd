package redisstore

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/offlinebox/offlinebox/schemas"
)

func storedPreview(t *testing.T, s *Store, user, conv string) *Preview {
	t.Helper()
	raw, err := s.rdb.HGet(context.Background(), s.keys.Previews(user), conv).Result()
	if err != nil {
		return nil
	}
	var p Preview
	if err := json.Unmarshal([]byte(raw), &p); err != nil {
		t.Fatal(err)
	}
	return &p
}

func TestPreviewKeepsTheNewestMessageForEveryMemberWhoSawIt(t *testing.T) {
	s := readTestStore(t, 10)
	rs := newReadSeed(t, s)
	ctx := context.Background()
	rs.group("g", "bob", "ann")
	seq := rs.say("g", group, "bob", "", "first")
	rs.send(&schemas.Message{ConvId: "g", ConvType: group, Sender: "bob", Kind: schemas.Kind_KIND_MEMBER_JOIN, Recipients: []string{"late"}})
	s.rdb.HSet(ctx, s.keys.Profile("bot"), "ro", 1)
	rs.send(&schemas.Message{ConvId: "g", ConvType: group, Sender: "bob", Kind: schemas.Kind_KIND_MEMBER_JOIN, Recipients: []string{"bot"}})
	older := &schemas.Sequenced{Seq: seq, Epoch: 1, WriteTimeMs: 5, Message: groupText("g", "bob", "first")}
	newer := &schemas.Sequenced{Seq: seq + 1, Epoch: 1, WriteTimeMs: 6, Message: groupText("g", "bob", "second")}
	for _, batch := range [][]*schemas.Sequenced{{newer}, {older}, {newer}} {
		if err := s.ApplyPreviews(ctx, batch); err != nil {
			t.Fatal(err)
		}
	}
	for _, u := range []string{"ann", "bob"} {
		if p := storedPreview(t, s, u, "g"); p == nil || p.Seq != newer.Seq || p.Text != "second" {
			t.Fatalf("%s's preview %+v, want seq %d \"second\"", u, p, newer.Seq)
		}
	}
	if p := storedPreview(t, s, "late", "g"); p != nil {
		t.Fatalf("member who joined after the message got its preview %+v", p)
	}
	if p := storedPreview(t, s, "bot", "g"); p != nil {
		t.Fatalf("receive-only account got a preview %+v", p)
	}
	dm := &schemas.Sequenced{Seq: 1, Epoch: 1, WriteTimeMs: 7, Message: &schemas.Message{ConvId: "dm", ConvType: direct,
		Sender: "ann", Recipients: []string{"cid"}, Kind: schemas.Kind_KIND_MESSAGE, Body: []byte("yo")}}
	rs.growLarge("g", "bob")
	big := &schemas.Sequenced{Seq: seq + 5, Epoch: 1, WriteTimeMs: 8, Message: groupText("g", "bob", "large now")}
	if err := s.ApplyPreviews(ctx, []*schemas.Sequenced{dm, big}); err != nil {
		t.Fatal(err)
	}
	for _, u := range []string{"ann", "cid"} {
		if p := storedPreview(t, s, u, "dm"); p == nil || p.Text != "yo" {
			t.Fatalf("%s's direct preview %+v", u, p)
		}
	}
	if p := storedPreview(t, s, "ann", "g"); p.Seq != newer.Seq {
		t.Fatalf("large group preview written per member: %+v", p)
	}
}
