package fanout

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/offlinebox/offlinebox/internal/testenv"
	"github.com/offlinebox/offlinebox/redisstore"
	"github.com/offlinebox/offlinebox/schemas"
)

func TestInvalidRecordsAreDeadLetteredAndTheRestProceeds(t *testing.T) {
	big := msg("g", "big", "a")
	big.Body = make([]byte, 1001)
	// A valid message padded with an unknown field past the record limit.
	huge := append(record(msg("g", "huge", "a")).Value, padding(schemas.DefaultMaxRecordBytes)...)
	cases := []struct {
		name   string
		rec    *kgo.Record
		reason string
		code   string // told the sender
	}{
		{"undecodable", &kgo.Record{Topic: schemas.TopicMessages, Value: []byte{0xff, 0xff, 0xff}}, "record: does not decode", "invalid"},
		{"no conv_id", record(msg("", "x", "a")), "conv_id: is empty", "invalid"},
		{"no sender", record(msg("g", "x", "")), "sender: is empty", "invalid"},
		{"unknown kind", record(msg("g", "x", "a", func(m *schemas.Message) { m.Kind = 42 })), "kind: unknown kind 42", "invalid"},
		{"body over the limit", record(big), "body: is 1001 bytes, more than the limit of 1000", "too_large"},
		{"mentions over the limit", record(msg("g", "x", "a", mentions(users("m", schemas.DefaultMaxMentions+1)...))),
			"mentions: names 1001 users, more than the limit of 1000", "too_large"},
		{"join over the recipients limit", record(msg("g", "x", "a", join(users("r", schemas.DefaultMaxRecipients+1)...))),
			"recipients: names 5001 users, more than the limit of 5000", "too_large"},
		{"record over the limit", &kgo.Record{Topic: schemas.TopicMessages, Key: []byte("g"), Value: huge},
			"more than the record limit of 786432", "too_large"},
		{"at-most-once join", record(msg("g", "x", "a", join("z"), qos0)), "qos: a membership change cannot be at-most-once", "invalid"},
		{"stranger in a direct conversation", record(msg("d", "x", "c", to("a"))), "sender: direct conversation already has two other participants", "not_a_member"},
		{"group record in a direct conversation", record(msg("d", "x", "a")), "conv_type: is g but the conversation is d", "invalid"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, Config{Limits: schemas.Limits{BodyBytes: 1000}})
			f := h.fanout(nil)
			handle(t, f, records(msg("g", "create", "a", join("a", "b")), msg("d", "hi", "a", to("b"))))
			batch := []*kgo.Record{record(msg("g", "before", "b")), tc.rec, record(msg("g", "after", "a")),
				record(msg("d", "reply", "b", to("a")))}
			dead := handle(t, f, batch)
			if len(dead) != 1 || dead[0].Record != tc.rec || !strings.Contains(dead[0].Reason, tc.reason) {
				t.Fatalf("dead letters %+v, want only the bad record with %q", dead, tc.reason)
			}
			d := &kgo.Record{Headers: dead[0].Headers}
			if code, _ := header(d, schemas.HeaderDeadCode); code != tc.code {
				t.Fatalf("dead letter's code %q, want %q", code, tc.code)
			}
			if seq, _ := header(d, schemas.HeaderDeadSeq); seq != "0" {
				t.Fatalf("dead letter's seq %q, want 0: the record got none", seq)
			}
			if g, d := h.checkInboxes("g").seq, h.checkInboxes("d").seq; g != 3 || d != 2 {
				t.Fatalf("group has %d seqs, direct %d; want 3 and 2: the good records were not all sequenced", g, d)
			}
		})
	}
}

func TestAtMostOnceRecordsAreNeverStored(t *testing.T) {
	h := newHarness(t, Config{})
	f := h.fanout(nil)
	handle(t, f, records(
		msg("d", "hi", "a", to("b")),
		msg("d", "typing", "b", to("a"), qos0),
		msg("d", "presence", "a", to("b"), qos0),
		msg("d", "bye", "b", to("a")),
	))
	tr := h.checkInboxes("d")
	if tr.seq != 2 {
		t.Fatalf("%d seqs, want 2: at-most-once records were stored", tr.seq)
	}
	if got := len(h.sequencedOnTopic()["d"]); got != 2 {
		t.Fatalf("%d records on im.sequenced, want 2", got)
	}
}

// inboxField reads one field of a user's inbox index.
// inboxField reads one counter of user's inbox for conv; 'u', the unread
// count, is derived as readers do: last delivered less read ("" with no
// delivery).
func (h *harness) inboxField(user, conv string, counter byte) string {
	h.t.Helper()
	if counter == 'u' {
		l, r := h.inboxField(user, conv, 'l'), h.inboxField(user, conv, 'r')
		if l == "" {
			return ""
		}
		last, _ := strconv.ParseUint(l, 10, 64)
		read, _ := strconv.ParseUint(r, 10, 64)
		return strconv.FormatUint(last-min(last, read), 10)
	}
	v, _ := h.rdb.HGet(context.Background(), h.store.Keys().Inbox(user), conv+":"+string(counter)).Result()
	return v
}

func TestMembershipIsAppliedInStreamOrder(t *testing.T) {
	h := newHarness(t, Config{})
	f := h.fanout(nil)
	// One poll: joins and leaves in the middle of messages.
	handle(t, f, records(
		msg("g", "create", "a", join("a", "b", "d")), // seq 1
		msg("g", "m2", "b"),                          // 2
		msg("g", "m3", "a"),                          // 3
		msg("g", "add-c", "a", join("c")),            // 4: c sees from 5 on
		msg("g", "m5", "b", mentions("c")),           // 5
		msg("g", "b-leaves", "b", leave("b")),        // 6: b gets nothing from here
		msg("g", "m7", "a", mentions("b")),           // 7
		msg("g", "m8", "d"),                          // 8
	))
	h.checkInboxes("g")
	cases := []struct {
		user                       string
		last, read, unread, joined string
		lane                       []string
	}{
		{"a", "8", "7", "1", "0", nil},             // own 1, 3, 4, 7
		{"b", "5", "5", "0", "0", nil},             // own 2, 5; left before the mention at 7
		{"c", "8", "4", "4", "4", []string{"g:5"}}, // nothing up to its join
		{"d", "8", "8", "0", "0", nil},             // own 8 reads everything
	}
	for _, tc := range cases {
		l, r, u, j := h.inboxField(tc.user, "g", 'l'), h.inboxField(tc.user, "g", 'r'), h.inboxField(tc.user, "g", 'u'), h.inboxField(tc.user, "g", 'j')
		if l != tc.last || r != tc.read || u != tc.unread || j != tc.joined {
			t.Errorf("%s: last %s read %s unread %s joined %s; want %s %s %s %s", tc.user, l, r, u, j, tc.last, tc.read, tc.unread, tc.joined)
		}
		lane, _ := h.rdb.ZRange(context.Background(), h.store.Keys().Mentions(tc.user), 0, -1).Result()
		if fmt.Sprint(lane) != fmt.Sprint(tc.lane) && !(len(lane) == 0 && len(tc.lane) == 0) {
			t.Errorf("%s: mention lane %v, want %v", tc.user, lane, tc.lane)
		}
	}
}

func TestLargeGroupsWriteOnlyTheUsersARecordNames(t *testing.T) {
	h := newHarness(t, Config{Store: redisstore.Config{LargeGroupThreshold: 5}})
	calls := newRedisCalls()
	f := h.fanout(countedClient(t, calls))
	members := users("u", 8)
	handle(t, f, records(msg("lg", "create", members[0], join(members...))))
	for _, u := range members {
		if typ := h.inboxField(u, "lg", 't'); typ != "L" {
			t.Fatalf("%s: form %q after the group was created large, want L", u, typ)
		}
	}
	calls.reset()
	handle(t, f, records(
		msg("lg", "m2", members[1]),
		msg("lg", "m3", members[2], mentions(members[5], "stranger")),
		msg("lg", "all", members[3], mentionAll),
		msg("lg", "add", members[0], join("late")),
		msg("lg", "m6", "late", mentions(members[1])),
		msg("lg", "bye", members[4], leave(members[4])),
		msg("lg", "m8", members[6]),
	))
	written := map[string]bool{}
	for key := range calls.inbox {
		written[key[strings.Index(key, "{u:")+3:strings.Index(key, "}")]] = true
	}
	want := []string{members[0], members[1], members[2], members[3], members[4], members[5], members[6], "late"}
	if len(written) != len(want) {
		t.Errorf("inbox writes for %v, want only senders, mentioned users, the joiner and the leaver %v", written, want)
	}
	if written[members[7]] {
		t.Errorf("%s was written although no record named them", members[7])
	}
	tr := h.checkInboxes("lg")
	if all, _ := h.rdb.ZRange(context.Background(), h.store.Keys().MentionAll("lg"), 0, -1).Result(); fmt.Sprint(all) != "[4]" {
		t.Errorf("@all references %v, want [4]", all)
	}
	if tr.largeFrom != 1 {
		t.Errorf("large from %d, want 1", tr.largeFrom)
	}
}

func TestAGroupThatGrowsLargeMidPollSwitchesEveryMemberOnce(t *testing.T) {
	h := newHarness(t, Config{Store: redisstore.Config{LargeGroupThreshold: 5}})
	f := h.fanout(nil)
	founders := users("u", 4)
	recs := records(
		msg("g", "create", founders[0], join(founders...)), // 1
		msg("g", "all-small", founders[1], mentionAll),     // 2: a mention per member
		msg("g", "grow", founders[0], join("x", "y")),      // 3: 6 members, large from here
		msg("g", "all-large", founders[2], mentionAll),     // 4: one reference
		msg("g", "m5", "x", mentions(founders[3])),         // 5
	)
	handle(t, f, recs)
	handle(t, f, recs) // a replay converts nothing twice and loses nothing
	tr := h.checkInboxes("g")
	if tr.largeFrom != 3 {
		t.Fatalf("large from %d, want 3", tr.largeFrom)
	}
	for _, u := range append(founders, "x", "y") {
		if typ := h.inboxField(u, "g", 't'); typ != "L" {
			t.Errorf("%s: form %q, want L", u, typ)
		}
	}
	if lgc, _ := h.rdb.HGet(context.Background(), h.store.Keys().ConvMeta("g"), "lgc").Result(); lgc != "1" {
		t.Errorf("meta lgc %q, want 1 after the conversion", lgc)
	}
}

func TestReceiveOnlyAccountsGetNoInboxWrites(t *testing.T) {
	h := newHarness(t, Config{})
	ctx := context.Background()
	k := h.store.Keys()
	h.rdb.HSet(ctx, k.Profile("bot"), "ro", "1")
	f := h.fanout(nil)
	handle(t, f, records(
		msg("d", "to-bot", "a", to("bot"), mentions("bot")),
		msg("d", "from-bot", "bot", to("a")),
		msg("g", "create", "a", join("a", "bot", "b")),
		msg("g", "m2", "b", mentionAll),
	))
	for _, key := range []string{k.Inbox("bot"), k.Mentions("bot"), k.ConvList("bot")} {
		if n, _ := h.rdb.Exists(ctx, key).Result(); n != 0 {
			t.Errorf("%s was written for a receive-only account", key)
		}
	}
	if u := h.inboxField("a", "d", 'u'); u != "1" {
		t.Errorf("a's unread in d is %q, want 1", u)
	}
	if u := h.inboxField("a", "g", 'u'); u != "1" {
		t.Errorf("a's unread in g is %q, want 1", u)
	}
}

func TestRedisDownFailsTheBatchAndProducesNothing(t *testing.T) {
	h := newHarness(t, Config{Store: redisstore.Config{CallTimeout: time.Second}})
	port, err := testenv.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	down := redis.NewClient(&redis.Options{Addr: fmt.Sprintf("127.0.0.1:%d", port), MaxRetries: -1})
	t.Cleanup(func() { _ = down.Close() })
	dead, err := h.fanout(down).Handle(context.Background(), records(msg("d", "hi", "a", to("b"))))
	if err == nil || len(dead) != 0 {
		t.Fatalf("Handle with Redis down: dead %v, err %v; want an error so the runner retries", dead, err)
	}
	if got := h.sequencedOnTopic(); len(got) != 0 {
		t.Fatalf("records reached im.sequenced while Redis was down: %v", got)
	}
}
