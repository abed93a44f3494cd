package convindex

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/offlinebox/offlinebox/internal/testenv"
	"github.com/offlinebox/offlinebox/redisstore"
	"github.com/offlinebox/offlinebox/schemas"
)

// deliverTo applies a conversation's messages to user's inbox, as fanout
// would.
func deliverTo(t *testing.T, s *redisstore.Store, user, conv string, sq []*schemas.Sequenced) {
	t.Helper()
	var evs []redisstore.InboxEvent
	for _, m := range sq {
		evs = append(evs, redisstore.InboxEvent{Kind: redisstore.InboxDelivered, Seq: m.Seq, WriteMS: 1_700_000_000_000})
	}
	_, errs := s.ApplyInboxes(context.Background(), []redisstore.InboxUpdate{{User: user, Conv: conv, Form: redisstore.InboxGroup, Events: evs}})
	if errs[0] != nil {
		t.Fatal(errs[0])
	}
}

// A conversation whose meta someone SET to a string, and a user whose
// inbox is a string, can never take a preview or a read receipt:
// the record of each is dead-lettered naming the key's owner and
// WRONGTYPE, every other record of the batch is applied, the call
// succeeds (so the runner commits), and a retried batch changes nothing
// more.
func TestAPreviewOrReceiptThatCanNeverBeWrittenIsDeadLetteredAndTheRestApplied(t *testing.T) {
	s := testStore(t)
	ix := newIndexer(t, redisstore.NewInboxRouter(s, nil, 0))
	ctx := context.Background()
	g, h := group(t, s, "g", 3), group(t, s, "h", 3)
	deliverTo(t, s, "bob", "h", h)
	for _, k := range []string{s.Keys().ConvMeta("g"), s.Keys().Inbox("ann")} {
		if err := s.Client().Del(ctx, k).Err(); err != nil {
			t.Fatal(err)
		}
		if err := s.Client().Set(ctx, k, "someone's string", 0).Err(); err != nil {
			t.Fatal(err)
		}
	}
	lastG, lastH := seqRecord(t, g[len(g)-1]), seqRecord(t, h[len(h)-1])
	annReads, bobReads := receipt(t, "ann", "h", h[1].Seq), receipt(t, "bob", "h", h[1].Seq)
	recs := []*kgo.Record{seqRecord(t, g[1]), lastG, lastH, annReads, bobReads}
	for try := range 2 {
		dead, err := ix.Handle(ctx, recs)
		if err != nil {
			t.Fatalf("try %d: Handle failed whole: %v", try, err)
		}
		if len(dead) != 2 || dead[0].Record != lastG || dead[1].Record != annReads {
			t.Fatalf("try %d: dead letters %+v, want g's newest message and ann's receipt", try, dead)
		}
		for i, want := range [][]string{{"preview", "seq 4 of g", "WRONGTYPE"}, {"read receipt of ann in h", "WRONGTYPE"}} {
			for _, w := range want {
				if !strings.Contains(dead[i].Reason, w) {
					t.Fatalf("dead letter %d: reason %q does not say %q", i, dead[i].Reason, w)
				}
			}
		}
		for _, u := range []string{"ann", "bob"} {
			if p := preview(t, s, u, "h"); p.Seq != h[len(h)-1].Seq {
				t.Fatalf("%s's preview of h %+v, want seq %d", u, p, h[len(h)-1].Seq)
			}
			if p := preview(t, s, u, "g"); p.Seq != 0 {
				t.Fatalf("%s's preview of g %+v, want none", u, p)
			}
		}
		if r := s.Client().HGet(ctx, s.Keys().Inbox("bob"), "h:r").Val(); r != fmt.Sprint(h[1].Seq) {
			t.Fatalf("bob's read seq of h %q, want %d", r, h[1].Seq)
		}
		if v := s.Client().Get(ctx, s.Keys().Inbox("ann")).Val(); v != "someone's string" {
			t.Fatalf("ann's broken inbox now holds %q", v)
		}
	}
}

// A server that stops answering is a store to wait for: the call fails
// whole, nothing is dead-lettered, and once the server answers again the
// same records are applied.
func TestAServerThatStopsAnsweringFailsTheBatchAndNothingIsDeadLettered(t *testing.T) {
	s := testStore(t)
	ctx := context.Background()
	g := group(t, s, "g", 3)
	sick := redis.NewClient(&redis.Options{Addr: testenv.RedisAddr(t), MaxRetries: -1, ReadTimeout: 200 * time.Millisecond})
	t.Cleanup(func() { _ = sick.Close() })
	slow, err := redisstore.New(sick, redisstore.Config{Prefix: s.Config().Prefix})
	if err != nil {
		t.Fatal(err)
	}
	admin := redis.NewClient(&redis.Options{Addr: testenv.RedisAddr(t)})
	t.Cleanup(func() {
		admin.Do(context.Background(), "CLIENT", "UNPAUSE")
		_ = admin.Close()
	})
	ix := newIndexer(t, redisstore.NewInboxRouter(slow, nil, 0))
	recs := []*kgo.Record{seqRecord(t, g[len(g)-1]), receipt(t, "ann", "g", g[1].Seq)}
	if err := admin.Do(ctx, "CLIENT", "PAUSE", 1000, "WRITE").Err(); err != nil {
		t.Fatal(err)
	}
	dead, err := ix.Handle(ctx, recs)
	if err == nil || len(dead) != 0 {
		t.Fatalf("Handle while the server was paused: %d dead letters, error %v; want none and an error", len(dead), err)
	}
	if redisstore.Permanent(err) {
		t.Fatalf("Permanent(%v) = true: a paused server would lose records", err)
	}
	if err := admin.Do(ctx, "CLIENT", "UNPAUSE").Err(); err != nil {
		t.Fatal(err)
	}
	if dead, err := ix.Handle(ctx, recs); err != nil || len(dead) != 0 {
		t.Fatalf("the retried batch: %d dead letters, %v", len(dead), err)
	}
	if p := preview(t, s, "ann", "g"); p.Seq != g[len(g)-1].Seq {
		t.Fatalf("ann's preview %+v after the retry", p)
	}
	if r := s.Client().HGet(ctx, s.Keys().Inbox("ann"), "g:r").Val(); r != fmt.Sprint(g[1].Seq) {
		t.Fatalf("ann's read seq %q after the retry, want %d", r, g[1].Seq)
	}
}
