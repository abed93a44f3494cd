package redisstore

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// indexDrift describes how a user's list indexes differ from the inbox and
// lane they index ("" when they agree), and whether they are built.
func indexDrift(t *testing.T, s *Store, user string) (drift string, built bool) {
	t.Helper()
	ix, err := s.ReadListIndex(context.Background(), user)
	if err != nil {
		t.Fatal(err)
	}
	sorted := func(v []string) string { return fmt.Sprint(slices.Sorted(slices.Values(v))) }
	if a, b := sorted(ix.Large), sorted(ix.InboxLarge); a != b {
		drift += fmt.Sprintf("large set %s, inbox L %s; ", a, b)
	}
	if a, b := sorted(ix.Index), sorted(ix.Lane); a != b {
		drift += fmt.Sprintf("mention index %s, lane %s", a, b)
	}
	return drift, ix.Built
}

// forgetListIndexes leaves user's keys as a store older than the list
// indexes wrote them.
func forgetListIndexes(t *testing.T, s *Store, user string) {
	t.Helper()
	ctx := context.Background()
	if err := s.rdb.Del(ctx, s.keys.MentionIndex(user)).Err(); err != nil {
		t.Fatal(err)
	}
	if err := s.rdb.HDel(ctx, s.keys.Inbox(user), InboxLargeGroups, InboxIndexed, ":ixh", ":ixz").Err(); err != nil {
		t.Fatal(err)
	}
}

func TestListIndexesChangeInTheSameScriptsAsWhatTheyIndex(t *testing.T) {
	s := readTestStore(t, 100)
	ctx := context.Background()
	day := int64(86_400_000)
	now := time.UnixMilli(40 * day)
	apply := func(conv string, form InboxForm, evs ...InboxEvent) {
		t.Helper()
		if _, errs := s.ApplyInboxes(ctx, []InboxUpdate{{User: "u", Conv: conv, Form: form, Events: evs}}); errs[0] != nil {
			t.Fatal(errs[0])
		}
	}
	at := func(k InboxEventKind, seq uint64, ms int64) InboxEvent {
		return InboxEvent{Kind: k, Seq: seq, WriteMS: ms}
	}
	old, recent := now.UnixMilli()-20*day, now.UnixMilli()-day
	steps := []struct {
		name string
		do   func()
		want []string // the mention index afterwards
	}{
		{"mentions in two conversations", func() {
			apply("a", InboxGroup, at(InboxMentioned, 1, old), at(InboxDelivered, 2, old), at(InboxMentioned, 3, recent))
			apply("b", InboxDirect, at(InboxMentioned, 1, recent))
		}, []string{"a:1", "a:3", "b:1"}},
		{"an own message reads a's mentions", func() { apply("a", InboxGroup, at(InboxOwn, 4, recent)) }, []string{"b:1"}},
		{"a mention of a large group", func() {
			apply("big", InboxLarge, at(InboxJoined, 10, recent), at(InboxMentioned, 12, recent))
		}, []string{"b:1", "big:12"}},
		{"a read receipt", func() {
			if _, err := s.ApplyReads(ctx, []ReadMark{{User: "u", Conv: "big", Seq: 12}}); err != nil {
				t.Fatal(err)
			}
		}, []string{"b:1"}},
		{"leaving the large group", func() { apply("big", InboxLarge, at(InboxLeftLarge, 20, recent)) }, []string{"b:1"}},
		{"a group becoming large", func() {
			apply("c", InboxGroup, at(InboxMentioned, 1, old))
			apply("c", InboxGroup, at(InboxConvertLarge, 2, recent))
		}, []string{"b:1", "c:1"}},
		{"expiry", func() {
			r := Retention{Window: 7 * 24 * time.Hour}
			if _, err := s.ExpireMentions(ctx, "u", now, r, 10); err != nil {
				t.Fatal(err)
			}
		}, []string{"b:1"}},
	}
	for _, st := range steps {
		st.do()
		drift, built := indexDrift(t, s, "u")
		if drift != "" || !built {
			t.Fatalf("after %s: built=%v, %s", st.name, built, drift)
		}
		got, _ := s.rdb.ZRange(ctx, s.keys.MentionIndex("u"), 0, -1).Result()
		if fmt.Sprint(got) != fmt.Sprint(st.want) {
			t.Fatalf("after %s: mention index %v, want %v", st.name, got, st.want)
		}
	}
	large, _ := s.rdb.HGet(ctx, s.keys.Inbox("u"), InboxLargeGroups).Result()
	if large != "\nc\n" {
		t.Fatalf("large groups %v, want [c]", large)
	}
}

func TestAnOlderInboxGetsItsListIndexesBuiltWhileWritesGoOn(t *testing.T) {
	s := readTestStore(t, 100)
	ctx := context.Background()
	k := s.keys
	// An inbox as a store without the indexes wrote it: 300 conversations,
	// every third large, every fifth with a mention.
	p := s.rdb.Pipeline()
	for i := range 300 {
		c := fmt.Sprint("c", i)
		form := "g"
		if i%3 == 0 {
			form = "L"
		}
		p.HSet(ctx, k.Inbox("u"), InboxField(c, FieldType), form, InboxField(c, FieldLast), 5, InboxField(c, FieldRead), 1,
			InboxField(c, 'u'), 4, InboxField(c, FieldJoined), 0) // 'u': the unread an older inbox stored
		if form == "g" {
			p.ZAdd(ctx, k.ConvList("u"), redis.Z{Member: c, Score: float64(1000 + i)})
		}
		if i%5 == 0 {
			p.ZAdd(ctx, k.Mentions("u"), redis.Z{Member: MentionMember(c, 3), Score: 1000})
		}
	}
	if _, err := p.Exec(ctx); err != nil {
		t.Fatal(err)
	}
	if _, built := indexDrift(t, s, "u"); built {
		t.Fatal("an inbox written without the indexes counts as indexed")
	}
	keys := []string{k.Inbox("u"), k.Mentions("u"), k.MentionIndex("u"), k.Profile("u")}
	writes := []func(){
		func() { // a new mention, in a conversation the scan may have passed
			s.ApplyInboxes(ctx, []InboxUpdate{{User: "u", Conv: "c1", Form: InboxGroup, Events: []InboxEvent{{InboxMentioned, 6, 2000}}}})
		},
		func() { s.ApplyReads(ctx, []ReadMark{{User: "u", Conv: "c0", Seq: 5}}) }, // drops c0:3
		func() { // leaving a large group
			s.ApplyInboxes(ctx, []InboxUpdate{{User: "u", Conv: "c3", Form: InboxLarge, Events: []InboxEvent{{InboxLeftLarge, 9, 2000}}}})
		},
		func() { // a group becoming large
			s.ApplyInboxes(ctx, []InboxUpdate{{User: "u", Conv: "c299", Form: InboxGroup, Events: []InboxEvent{{InboxConvertLarge, 9, 2000}}}})
		},
	}
	steps := 0
	for ; steps < 1000; steps++ {
		done, err := listIndexBuildScript.Run(ctx, s.rdb, keys, 16).Int()
		if err != nil {
			t.Fatal(err)
		}
		if done == 1 {
			break
		}
		if steps < len(writes) {
			writes[steps]()
		}
	}
	if steps < len(writes) {
		t.Fatalf("built in %d steps of 16, before every write ran", steps)
	}
	if drift, built := indexDrift(t, s, "u"); drift != "" || !built {
		t.Fatalf("after %d steps: built=%v, %s", steps, built, drift)
	}
	items, err := ReadPathForTests.List(ctx, s, "u", 3)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, it := range items {
		got = append(got, fmt.Sprintf("%s:%d", it.Conv, it.Mentions))
	}
	// c3 (left its large group) and c1 (a new mention) are the most recent,
	// both at 2000, ties by id descending; c297 is large, listed by its
	// group's own activity
	if want := "[c3:0 c1:1 c298:0]"; fmt.Sprint(got) != want {
		t.Fatalf("first page %v, want %s", got, want)
	}
}
