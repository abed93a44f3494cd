package rebuild

import (
	"context"
	"github.com/offlinebox/offlinebox/redisstore"
	"testing"
)

// Members whose inbox lost a rebuilt conversation get an entry again as
// it stands (delivered to the counter, read to their last own message or
// their join, in its epoch, listed); an entry that survived is untouched.
func TestRestoreInboxEntriesGivesMembersWhoseInboxLostTheConversationAnEntry(t *testing.T) {
	groups := []struct {
		name       string
		store      func(*testing.T) *rig
		last, form string
	}{
		{"small group", expStore, "7", "g"},
		{"large group", rbStore, "0", "L"}, // its unread is derived from the counter
	}
	for _, g := range groups {
		t.Run(g.name, func(t *testing.T) { restoreInboxEntries(t, g.store(t), g.last, g.form) })
	}
}

func restoreInboxEntries(t *testing.T, s *rig, last, form string) {
	ctx := context.Background()
	rbSeed(t, s, "g1", expNow)
	kept := map[string]string{redisstore.InboxField("g1", redisstore.FieldLast): "5", redisstore.InboxField("g1", redisstore.FieldRead): "2"}
	if err := s.rdb.HSet(ctx, s.keys.Inbox("bob"), kept).Err(); err != nil {
		t.Fatal(err)
	}
	epoch, err := s.rdb.HGet(ctx, s.keys.ConvMeta("g1"), redisstore.MetaEpoch).Result()
	if err != nil {
		t.Fatal(err)
	}
	n, err := s.RestoreInboxEntries(ctx, "g1")
	if err != nil || n != 3 {
		t.Fatalf("RestoreInboxEntries = %d, %v; want 3 entries (alice, dave, erin)", n, err)
	}
	cases := []struct {
		user                      string
		last, read, joined, epoch string
		form                      string
	}{
		{"alice", last, "7", "0", epoch, form}, // every message is hers
		{"dave", last, "3", "3", epoch, form},  // joined at 3, sent nothing
		{"erin", last, "3", "3", epoch, form},
		{"bob", "5", "2", "", "", ""}, // kept as it was
		{"carol", "", "", "", "", ""}, // left: no member, no entry
	}
	for _, c := range cases {
		t.Run(c.user, func(t *testing.T) {
			v, err := s.rdb.HMGet(ctx, s.keys.Inbox(c.user), redisstore.InboxField("g1", redisstore.FieldLast), redisstore.InboxField("g1", redisstore.FieldRead),
				redisstore.InboxField("g1", redisstore.FieldJoined), redisstore.InboxField("g1", redisstore.FieldEpoch), redisstore.InboxField("g1", redisstore.FieldType)).Result()
			if err != nil {
				t.Fatal(err)
			}
			got := [5]string{hashString(v[0]), hashString(v[1]), hashString(v[2]), hashString(v[3]), hashString(v[4])}
			if want := [5]string{c.last, c.read, c.joined, c.epoch, c.form}; got != want {
				t.Fatalf("entry (l, r, j, e, t) %v, want %v", got, want)
			}
			listed, err := s.rdb.ZScore(ctx, s.keys.ConvList(c.user), "g1").Result()
			if (c.form != "") != (err == nil) || (err == nil && listed == 0) {
				t.Fatalf("conversation list score %v (err %v); listed: want %v", listed, err, c.form != "")
			}
		})
	}
	if n, err := s.RestoreInboxEntries(ctx, "g1"); err != nil || n != 0 {
		t.Fatalf("a second run restored %d entries (err %v), want none", n, err)
	}
}
