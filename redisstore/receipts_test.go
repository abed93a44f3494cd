package redisstore

import (
	"context"
	"fmt"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/offlinebox/offlinebox/internal/testenv"
)

// receiptStore is a store whose script calls are counted, with the
// receipts script loaded (so no call is sent again after NOSCRIPT), and
// conversations of epoch 7 whose members are alice, bob and carol.
func receiptStore(t *testing.T, rdb redis.UniversalClient, prefix string, convs []string) (*Store, *scriptCalls) {
	t.Helper()
	ctx := context.Background()
	for _, sc := range []*redis.Script{receiptsRaiseScript, ackCursorScript} {
		if err := sc.Load(ctx, rdb).Err(); err != nil {
			t.Fatal(err)
		}
	}
	calls := &scriptCalls{}
	rdb.AddHook(commandHook(calls.count))
	s, err := New(rdb, Config{Prefix: prefix})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range convs {
		if err := s.rdb.HSet(ctx, s.keys.ConvMeta(c), "epoch", 7, "seq", 30).Err(); err != nil {
			t.Fatal(err)
		}
		if err := s.rdb.HSet(ctx, s.keys.Members(c), "alice", 0, "bob", 0, "carol", 0).Err(); err != nil {
			t.Fatal(err)
		}
	}
	return s, calls
}

// receiptCounts renders the receipts of every seq up to 30 of convs.
func receiptCounts(t *testing.T, s *Store, convs []string) string {
	t.Helper()
	var out string
	for _, c := range convs {
		for seq := uint64(1); seq <= 30; seq++ {
			n, err := s.CountReceipts(context.Background(), c, seq, "alice")
			if err != nil {
				t.Fatal(err)
			}
			out += fmt.Sprintf("%s/%d %d %d %d %d\n", c, seq, n.Epoch, n.Delivered, n.Read, n.Others)
		}
	}
	return out
}

// Marks of 20 conversations raised in one script call raise and count
// what one call per mark does: raises, lower and stale-epoch marks that
// change nothing, a read that is a delivery too, and a conversation whose
// epoch moved on.
func TestReceiptsOfManyConversationsInOneCallCountWhatOneCallPerMarkCounts(t *testing.T) {
	ctx := context.Background()
	var convs []string
	for i := range 20 {
		convs = append(convs, fmt.Sprintf("g%02d", i))
	}
	manyRdb, manyPrefix := testenv.Redis(t)
	oneRdb, onePrefix := testenv.Redis(t)
	many, manyCalls := receiptStore(t, manyRdb, manyPrefix, convs)
	one, oneCalls := receiptStore(t, oneRdb, onePrefix, convs)

	type batch struct {
		kind  byte
		marks []ReceiptMark
		// moveEpoch: conversations whose epoch becomes 8 before the batch
		moveEpoch []string
	}
	var batches []batch
	var b1, b2, b3, b4 []ReceiptMark
	for i, c := range convs {
		b1 = append(b1, ReceiptMark{Conv: c, Epoch: 7, Member: "bob", Seq: uint64(i + 2)})
		b2 = append(b2, ReceiptMark{Conv: c, Epoch: 7, Member: "carol", Seq: uint64(i%5 + 1)})
		switch i % 3 {
		case 0:
			b3 = append(b3, ReceiptMark{Conv: c, Epoch: 7, Member: "bob", Seq: 1}) // lower: nothing
		case 1:
			b3 = append(b3, ReceiptMark{Conv: c, Epoch: 6, Member: "bob", Seq: 29}) // stale epoch
		default:
			b3 = append(b3, ReceiptMark{Conv: c, Epoch: 7, Member: "bob", Seq: 25},
				ReceiptMark{Conv: c, Epoch: 7, Member: "alice", Seq: 26})
		}
		b4 = append(b4, ReceiptMark{Conv: c, Epoch: 8, Member: "bob", Seq: 3})
	}
	batches = append(batches, batch{kind: ReceiptDelivered, marks: b1}, batch{kind: ReceiptRead, marks: b2},
		batch{kind: ReceiptDelivered, marks: b3},
		batch{kind: ReceiptDelivered, marks: b4, moveEpoch: []string{"g03", "g10"}})
	for n, b := range batches {
		for _, s := range []*Store{many, one} {
			for _, c := range b.moveEpoch {
				if err := s.rdb.HSet(ctx, s.keys.ConvMeta(c), "epoch", 8).Err(); err != nil {
					t.Fatal(err)
				}
			}
		}
		before := manyCalls.n.Load()
		gotMany, err := many.RaiseReceipts(ctx, b.kind, b.marks)
		if err != nil {
			t.Fatal(err)
		}
		if got := manyCalls.n.Load() - before; got != 1 {
			t.Fatalf("batch %d: %d script calls for %d marks of %d conversations, want 1", n, got, len(b.marks), len(convs))
		}
		var gotOne []RaisedReceipt
		before = oneCalls.n.Load()
		for _, m := range b.marks {
			r, err := one.RaiseReceipts(ctx, b.kind, []ReceiptMark{m})
			if err != nil {
				t.Fatal(err)
			}
			gotOne = append(gotOne, r...)
		}
		if got := oneCalls.n.Load() - before; got != int64(len(b.marks)) {
			t.Fatalf("batch %d: %d script calls for %d marks one at a time", n, got, len(b.marks))
		}
		if fmt.Sprint(gotMany) != fmt.Sprint(gotOne) {
			t.Fatalf("batch %d raised\none call    %v\none per mark %v", n, gotMany, gotOne)
		}
		if m, o := receiptCounts(t, many, convs), receiptCounts(t, one, convs); m != o {
			t.Fatalf("batch %d: counts differ\none call\n%s\none per mark\n%s", n, m, o)
		}
	}
	// spot checks, so that equal is also right
	if r, err := many.CountReceipts(ctx, "g05", 7, "alice"); err != nil || r.Delivered != 1 || r.Read != 0 || r.Others != 2 {
		t.Fatalf("g05 seq 7: %+v %v, want delivered to bob only", r, err)
	}
	if r, err := many.CountReceipts(ctx, "g03", 2, "alice"); err != nil || r.Epoch != 8 || r.Delivered != 1 || r.Read != 0 {
		t.Fatalf("g03 after its epoch moved: %+v %v, want only bob's raise of epoch 8", r, err)
	}

	// An ack of the 20 conversations is two script calls: the device's
	// cursors and the members' receipts.
	var items []AckItem
	var marks []ReceiptMark
	for _, c := range convs {
		items = append(items, AckItem{Conv: c, Seq: 28, Epoch: 7})
		marks = append(marks, ReceiptMark{Conv: c, Epoch: 7, Member: "carol", Seq: 28})
	}
	before := manyCalls.n.Load()
	_, raised, err := many.AckAndRaise(ctx, "carol", "phone", items, 1, marks)
	if err != nil {
		t.Fatal(err)
	}
	if got := manyCalls.n.Load() - before; got != 2 {
		t.Fatalf("an ack of %d conversations made %d script calls, want 2", len(convs), got)
	}
	for i, r := range raised {
		if want := convs[i] != "g03" && convs[i] != "g10"; r.Raised != want || r.Conv != convs[i] || r.Member != "carol" {
			t.Fatalf("ack raise %d: %+v, want raised %v", i, r, want)
		}
	}
}

// On a Redis Cluster a receipts call holds the conversations of one slot:
// those that share a slot go in one call, the others in one call per slot,
// alone or beside an ack's device script, and every count is right.
func TestReceiptsOnAClusterAreRaisedOneCallPerSlotAloneOrWithAnAck(t *testing.T) {
	ctx := context.Background()
	crdb, prefix := testenv.RedisCluster(t)
	probe, err := New(crdb, Config{Prefix: prefix})
	if err != nil {
		t.Fatal(err)
	}
	slot := func(c string) int { return keyHashSlot(probe.keys.ConvMeta(c)) }
	convs := []string{"c0"}
	for i := 1; len(convs) < 3; i++ { // two more in c0's slot
		if c := fmt.Sprintf("c%d", i); slot(c) == slot("c0") {
			convs = append(convs, c)
		}
	}
	slots := map[int]bool{slot("c0"): true}
	for i := 0; len(slots) < 5; i++ {
		if c := fmt.Sprintf("o%d", i); !slots[slot(c)] {
			slots[slot(c)] = true
			convs = append(convs, c)
		}
	}
	s, calls := receiptStore(t, crdb, prefix, convs)
	var marks []ReceiptMark
	for i, c := range convs {
		marks = append(marks, ReceiptMark{Conv: c, Epoch: 7, Member: "bob", Seq: uint64(10 + i)},
			ReceiptMark{Conv: c, Epoch: 7, Member: "carol", Seq: 5})
	}
	before := calls.n.Load()
	raised, err := s.RaiseReceipts(ctx, ReceiptRead, marks)
	if err != nil {
		t.Fatal(err)
	}
	if got := calls.n.Load() - before; got != int64(len(slots)) {
		t.Fatalf("%d script calls for %d conversations in %d slots", got, len(convs), len(slots))
	}
	for i, r := range raised {
		if !r.Raised || r.Prev != 0 || r != (RaisedReceipt{ReceiptMark: marks[i], Raised: true}) {
			t.Fatalf("raise %d: %+v", i, r)
		}
	}
	for i, c := range convs {
		n, err := s.CountReceipts(ctx, c, uint64(10+i), "alice")
		if err != nil || n.Delivered != 1 || n.Read != 1 || n.Others != 2 {
			t.Fatalf("%s: %+v %v, want read (so delivered) by bob only", c, n, err)
		}
		if n, err = s.CountReceipts(ctx, c, 5, "alice"); err != nil || n.Read != 2 {
			t.Fatalf("%s seq 5: %+v %v, want read by bob and carol", c, n, err)
		}
	}
	// A replay changes nothing and says so.
	raised, err = s.RaiseReceipts(ctx, ReceiptRead, marks)
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range raised {
		if r.Raised || r.Prev != marks[i].Seq {
			t.Fatalf("replayed raise %d: %+v", i, r)
		}
	}
	// An ack spanning the slots: the device's cursors on the user's slot,
	// the receipts a call per slot, one pipeline split per node.
	var items []AckItem
	var acks []ReceiptMark
	for _, c := range convs {
		items = append(items, AckItem{Conv: c, Seq: 20, Epoch: 7})
		acks = append(acks, ReceiptMark{Conv: c, Epoch: 7, Member: "alice", Seq: 20})
	}
	before = calls.n.Load()
	if _, raised, err = s.AckAndRaise(ctx, "alice", "phone", items, 1, acks); err != nil {
		t.Fatal(err)
	}
	if got := calls.n.Load() - before; got != int64(1+len(slots)) {
		t.Fatalf("an ack of %d conversations in %d slots made %d script calls", len(convs), len(slots), got)
	}
	cur, err := s.DeviceCursors(ctx, "alice", "phone")
	if err != nil {
		t.Fatal(err)
	}
	for i, c := range convs {
		if !raised[i].Raised || cur[c] != (Position{Seq: 20, Epoch: 7}) {
			t.Fatalf("%s after the ack: raised %+v, cursor %+v", c, raised[i], cur[c])
		}
		if n, err := s.CountReceipts(ctx, c, 20, "bob"); err != nil || n.Delivered != 1 {
			t.Fatalf("%s seq 20 from bob: %+v %v, want delivered to alice", c, n, err)
		}
	}
}

// A direct conversation's peer cursors are the participant's other than
// the user's own, 0 where the peer has none yet.
func TestPeerReceiptsAreTheOtherParticipantsCursors(t *testing.T) {
	ctx := context.Background()
	rdb, prefix := testenv.Redis(t)
	s, _ := receiptStore(t, rdb, prefix, []string{"d1", "d2", "d3"})
	for _, c := range []string{"d1", "d2", "d3"} { // receipts count members only
		if err := s.rdb.HSet(ctx, s.keys.Members(c), "ann", 0).Err(); err != nil {
			t.Fatal(err)
		}
	}
	for _, r := range []struct {
		kind  byte
		marks []ReceiptMark
	}{
		{ReceiptDelivered, []ReceiptMark{{Conv: "d1", Epoch: 7, Member: "ann", Seq: 9}, {Conv: "d1", Epoch: 7, Member: "bob", Seq: 4},
			{Conv: "d2", Epoch: 7, Member: "ann", Seq: 3}}},
		{ReceiptRead, []ReceiptMark{{Conv: "d1", Epoch: 7, Member: "bob", Seq: 2}, {Conv: "d3", Epoch: 7, Member: "bob", Seq: 6}}},
	} {
		if _, err := s.RaiseReceipts(ctx, r.kind, r.marks); err != nil {
			t.Fatal(err)
		}
	}
	got, err := s.PeerReceipts(ctx, "ann", []string{"d1", "d2", "d3"})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]MemberReceipts{"d1": {Delivered: 4, Read: 2}, "d2": {}, "d3": {Delivered: 6, Read: 6}}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("ann's peers: %v, want %v", got, want)
	}
	if got, err := s.PeerReceipts(ctx, "bob", []string{"d1"}); err != nil || got["d1"] != (MemberReceipts{Delivered: 9}) {
		t.Fatalf("bob's peer in d1: %v %v", got, err)
	}
}
