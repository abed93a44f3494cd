package convindex

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"strconv"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"
	"google.golang.org/protobuf/proto"

	"github.com/offlinebox/offlinebox/internal/testenv"
	"github.com/offlinebox/offlinebox/redisstore"
	"github.com/offlinebox/offlinebox/schemas"
)

func testStore(t *testing.T) *redisstore.Store {
	t.Helper()
	rdb, prefix := testenv.Redis(t)
	s, err := redisstore.New(rdb, redisstore.Config{Prefix: prefix})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func newIndexer(t *testing.T, router *redisstore.InboxRouter) *Indexer {
	t.Helper()
	ix, err := New(Config{Logger: slog.New(slog.DiscardHandler)}, router)
	if err != nil {
		t.Fatal(err)
	}
	return ix
}

// group sequences a group of ann and bob with n messages from bob (the
// last one mentioning ann) and delivers them to ann's inbox; it returns
// the sequenced messages.
func group(t *testing.T, s *redisstore.Store, conv string, n int) []*schemas.Sequenced {
	t.Helper()
	ctx := context.Background()
	msgs := []*schemas.Message{{ClientMsgId: "create", ConvId: conv, ConvType: schemas.ConvType_CONV_TYPE_GROUP,
		Sender: "bob", Kind: schemas.Kind_KIND_MEMBER_JOIN, Recipients: []string{"bob", "ann"}}}
	for i := range n {
		m := &schemas.Message{ClientMsgId: fmt.Sprint("m", i), ConvId: conv, ConvType: schemas.ConvType_CONV_TYPE_GROUP,
			Sender: "bob", Kind: schemas.Kind_KIND_MESSAGE, ContentType: "text/plain", Body: []byte(fmt.Sprint("message ", i))}
		if i == n-1 {
			m.Mentions = []string{"ann"}
		}
		msgs = append(msgs, m)
	}
	res, err := s.Sequence(ctx, conv, msgs, nil, 1_700_000_000_000)
	if err != nil {
		t.Fatal(err)
	}
	var out []*schemas.Sequenced
	var evs []redisstore.InboxEvent
	for i, it := range res.Items {
		out = append(out, it.Sequenced)
		k := redisstore.InboxDelivered
		if len(msgs[i].Mentions) > 0 {
			k = redisstore.InboxMentioned
		}
		evs = append(evs, redisstore.InboxEvent{Kind: k, Seq: it.Sequenced.Seq, WriteMS: 1_700_000_000_000})
	}
	_, errs := s.ApplyInboxes(ctx, []redisstore.InboxUpdate{{User: "ann", Conv: conv, Form: redisstore.InboxGroup, Events: evs}})
	if errs[0] != nil {
		t.Fatal(errs[0])
	}
	return out
}

func seqRecord(t *testing.T, sq *schemas.Sequenced) *kgo.Record {
	v, err := proto.Marshal(sq)
	if err != nil {
		t.Fatal(err)
	}
	return &kgo.Record{Topic: schemas.TopicSequenced, Key: []byte(sq.GetMessage().GetConvId()), Value: v}
}

func receipt(t *testing.T, user, conv string, seq uint64) *kgo.Record {
	v, err := proto.Marshal(&schemas.Receipt{UserId: user, ConvId: conv, Seq: seq, Kind: schemas.ReceiptKind_RECEIPT_KIND_READ})
	if err != nil {
		t.Fatal(err)
	}
	return &kgo.Record{Topic: schemas.TopicReceipts, Key: []byte(user), Value: v}
}

func preview(t *testing.T, s *redisstore.Store, user, conv string) redisstore.Preview {
	t.Helper()
	raw := s.Client().HGet(context.Background(), s.Keys().Previews(user), conv).Val()
	var p redisstore.Preview
	if raw != "" {
		if err := json.Unmarshal([]byte(raw), &p); err != nil {
			t.Fatal(err)
		}
	}
	return p
}

func TestPreviewsFollowTheNewestMessageWhateverTheReplayOrder(t *testing.T) {
	s := testStore(t)
	ix := newIndexer(t, redisstore.NewInboxRouter(s, nil, 0))
	sq := group(t, s, "g", 5)
	batches := [][]*schemas.Sequenced{sq[:3], sq, sq[:2], sq}
	for _, b := range batches {
		var recs []*kgo.Record
		for _, m := range b {
			recs = append(recs, seqRecord(t, m))
		}
		if dead, err := ix.Handle(context.Background(), recs); err != nil || len(dead) != 0 {
			t.Fatalf("Handle: %v %v", dead, err)
		}
	}
	last := sq[len(sq)-1]
	for _, u := range []string{"ann", "bob"} {
		if p := preview(t, s, u, "g"); p.Seq != last.Seq || p.Text != "message 4" || p.Sender != "bob" {
			t.Fatalf("%s's preview %+v, want seq %d", u, p, last.Seq)
		}
	}
}

func TestReceiptsClearUnreadAndMentionsOnceAndDeadLetterGarbage(t *testing.T) {
	s := testStore(t)
	ix := newIndexer(t, redisstore.NewInboxRouter(s, nil, 0))
	sq := group(t, s, "g", 5)
	top := sq[len(sq)-1].Seq
	ctx := context.Background()
	garbage := &kgo.Record{Topic: schemas.TopicReceipts, Value: []byte("not a receipt")}
	stranger := &kgo.Record{Topic: "im.other", Value: []byte("x")}
	recs := []*kgo.Record{receipt(t, "ann", "g", 2), garbage, receipt(t, "ann", "g", top), stranger, receipt(t, "ann", "g", 3)}
	for range 2 { // a retried batch changes nothing more
		dead, err := ix.Handle(ctx, recs)
		if err != nil {
			t.Fatal(err)
		}
		if len(dead) != 2 || dead[0].Record != garbage || dead[1].Record != stranger {
			t.Fatalf("dead letters %+v", dead)
		}
		ib := s.Client().HGetAll(ctx, s.Keys().Inbox("ann")).Val()
		last, _ := strconv.ParseUint(ib["g:l"], 10, 64)
		if ib["g:r"] != fmt.Sprint(top) || last > top || s.Client().ZCard(ctx, s.Keys().Mentions("ann")).Val() != 0 {
			t.Fatalf("after reading up to %d: inbox %v, mentions %d", top, ib, s.Client().ZCard(ctx, s.Keys().Mentions("ann")).Val())
		}
	}
}

func TestReceiptsOfAUserMovedToTheHotStoreLandThere(t *testing.T) {
	s := testStore(t)
	rdbHot, hotPrefix := testenv.Redis(t)
	hot, err := redisstore.New(rdbHot, redisstore.Config{Prefix: hotPrefix})
	if err != nil {
		t.Fatal(err)
	}
	sq := group(t, s, "g", 3)
	mover := redisstore.NewInboxRouter(s, hot, 0)
	// The indexer's router loaded the hot set before the move: its copy
	// is stale until the store refuses the write.
	stale := redisstore.NewInboxRouter(s, hot, 0)
	if err := stale.Refresh(context.Background(), true); err != nil {
		t.Fatal(err)
	}
	if err := mover.MoveToHot(context.Background(), "ann"); err != nil {
		t.Fatal(err)
	}
	ix := newIndexer(t, stale)
	top := sq[len(sq)-1].Seq
	if _, err := ix.Handle(context.Background(), []*kgo.Record{receipt(t, "ann", "g", top), seqRecord(t, sq[len(sq)-1])}); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if r := hot.Client().HGet(ctx, hot.Keys().Inbox("ann"), "g:r").Val(); r != fmt.Sprint(top) {
		t.Fatalf("read seq on the hot store %q, want %d", r, top)
	}
	if p := preview(t, hot, "ann", "g"); p.Seq != top {
		t.Fatalf("preview on the hot store %+v", p)
	}
	if n := s.Client().Exists(ctx, s.Keys().Inbox("ann"), s.Keys().Previews("ann")).Val(); n != 0 {
		t.Fatalf("%d of ann's keys written on the main store after the move", n)
	}
}

// A receipt that arrives while the user's keys are being moved (the main
// copy is marked, the hot set does not list the user yet) fails the batch
// instead of landing on the copy about to be dropped; the runner retries
// it, and once the move is done it lands on the hot store.
func TestReceiptsDuringAMoveFailTheBatchAndLandAfterIt(t *testing.T) {
	s := testStore(t)
	rdbHot, hotPrefix := testenv.Redis(t)
	hot, err := redisstore.New(rdbHot, redisstore.Config{Prefix: hotPrefix})
	if err != nil {
		t.Fatal(err)
	}
	sq := group(t, s, "g", 3)
	top := sq[len(sq)-1].Seq
	ctx := context.Background()
	s.Client().HSet(ctx, s.Keys().Profile("ann"), "loc", "hot")
	before := s.Client().HGetAll(ctx, s.Keys().Inbox("ann")).Val()
	ix := newIndexer(t, redisstore.NewInboxRouter(s, hot, 0))
	recs := []*kgo.Record{receipt(t, "ann", "g", top)}
	if _, err := ix.Handle(ctx, recs); !errors.Is(err, redisstore.ErrUserMoved) {
		t.Fatalf("receipt during the move: %v, want ErrUserMoved", err)
	}
	if after := s.Client().HGetAll(ctx, s.Keys().Inbox("ann")).Val(); !maps.Equal(before, after) {
		t.Fatalf("the main copy changed during the move: %v then %v", before, after)
	}
	if err := redisstore.NewInboxRouter(s, hot, 0).MoveToHot(ctx, "ann"); err != nil {
		t.Fatal(err)
	}
	if _, err := ix.Handle(ctx, recs); err != nil {
		t.Fatalf("the retried batch: %v", err)
	}
	if r := hot.Client().HGet(ctx, hot.Keys().Inbox("ann"), "g:r").Val(); r != fmt.Sprint(top) {
		t.Fatalf("read seq on the hot store %q, want %d", r, top)
	}
}
