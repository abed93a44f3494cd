package live

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/offlinebox/offlinebox/redisstore"
)

func TestCoalescedAcksKeepTheNewestEpochsHighestSeqPerConversation(t *testing.T) {
	for _, tc := range []struct {
		name string
		acks [][]redisstore.AckItem
		want map[string]string // conv → seq@epoch
	}{
		{"one ack", [][]redisstore.AckItem{{{Conv: "a", Seq: 3, Epoch: 1}}}, map[string]string{"a": "3@1"}},
		{"a higher seq raises", [][]redisstore.AckItem{{{Conv: "a", Seq: 3, Epoch: 1}}, {{Conv: "a", Seq: 7, Epoch: 1}}}, map[string]string{"a": "7@1"}},
		{"a lower seq after a higher changes nothing", [][]redisstore.AckItem{{{Conv: "a", Seq: 7, Epoch: 1}}, {{Conv: "a", Seq: 3, Epoch: 1}}}, map[string]string{"a": "7@1"}},
		{"a newer epoch replaces a higher seq", [][]redisstore.AckItem{{{Conv: "a", Seq: 70, Epoch: 1}}, {{Conv: "a", Seq: 2, Epoch: 5}}}, map[string]string{"a": "2@5"}},
		{"an older epoch is ignored", [][]redisstore.AckItem{{{Conv: "a", Seq: 2, Epoch: 5}}, {{Conv: "a", Seq: 70, Epoch: 1}}}, map[string]string{"a": "2@5"}},
		{"conversations apart", [][]redisstore.AckItem{{{Conv: "a", Seq: 2, Epoch: 1}, {Conv: "b", Seq: 9, Epoch: 1}}, {{Conv: "a", Seq: 4, Epoch: 1}}},
			map[string]string{"a": "4@1", "b": "9@1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := &pendingAcks{items: map[string]redisstore.AckItem{}, marks: map[string]redisstore.ReceiptMark{}}
			held := 0
			for _, acks := range tc.acks {
				marks := make([]redisstore.ReceiptMark, len(acks))
				for i, a := range acks {
					marks[i] = redisstore.ReceiptMark{Conv: a.Conv, Epoch: a.Epoch, Seq: a.Seq, Member: "ann"}
				}
				held += p.merge(acks, marks, nil)
			}
			if held != len(tc.want) || len(p.items) != len(tc.want) {
				t.Fatalf("holds %d conversations (counted %d), want %d", len(p.items), held, len(tc.want))
			}
			for conv, want := range tc.want {
				if got := fmt.Sprintf("%d@%d", p.items[conv].Seq, p.items[conv].Epoch); got != want {
					t.Errorf("%s: cursor %s, want %s", conv, got, want)
				}
				if got := fmt.Sprintf("%d@%d", p.marks[conv].Seq, p.marks[conv].Epoch); got != want {
					t.Errorf("%s: delivered mark %s, want %s", conv, got, want)
				}
			}
		})
	}
}

func TestCoalescedAcksKeepEachSendersNewestSeq(t *testing.T) {
	p := &pendingAcks{items: map[string]redisstore.AckItem{}, marks: map[string]redisstore.ReceiptMark{}}
	p.merge(nil, nil, map[string]map[string]uint64{"a": {"bob": 4, "cy": 2}})
	p.merge(nil, nil, map[string]map[string]uint64{"a": {"bob": 3, "cy": 6}})
	if got := fmt.Sprint(p.senders["a"]); got != "map[bob:4 cy:6]" {
		t.Fatalf("senders %s, want bob 4 and cy 6", got)
	}
}

func TestTheAckFlushIntervalIsBoundedToASecond(t *testing.T) {
	for _, tc := range []struct {
		flush time.Duration
		ok    bool
	}{
		{0, true}, // the default
		{time.Millisecond, true},
		{MaxAckFlush, true},
		{MaxAckFlush + time.Millisecond, false},
		{-time.Millisecond, false},
	} {
		if err := (Config{AckFlush: tc.flush}).Validate(); (err == nil) != tc.ok {
			t.Errorf("AckFlush %s: %v, want ok %v", tc.flush, err, tc.ok)
		}
	}
	if got := (Config{}).WithDefaults().AckFlush; got != DefaultLiveAckFlush || got > MaxAckFlush {
		t.Errorf("default AckFlush %s", got)
	}
}

func TestAFlushWritesTheCursorsBeforeTheRaisesGetTheirMarks(t *testing.T) {
	h := testHub(t, Config{})
	c := &liveConn{hub: h, user: "ann", device: "phone"}
	ack := []redisstore.AckItem{{Conv: "g", Seq: 3, Epoch: 1}}
	mark := []redisstore.ReceiptMark{{Conv: "g", Epoch: 1, Member: "ann", Seq: 3}}
	if _, ok := h.acks.add(c, ack, mark, nil, 1000); !ok {
		t.Fatal("the ack was not held")
	}
	if len(h.raises.marks) != 0 {
		t.Fatal("the delivered mark was queued before the ack was written")
	}
	h.acks.flush()
	cur, err := h.router.DeviceCursors(context.Background(), "ann", "phone")
	if err != nil || cur["g"].Seq != 3 {
		t.Fatalf("after the flush the cursor is %+v (%v)", cur, err)
	}
	if len(h.raises.marks) != 1 || h.raises.marks[0] != mark[0] {
		t.Fatalf("after the flush the raises hold %+v", h.raises.marks)
	}
	if !c.ackRegistered.Load() {
		t.Fatal("the connection is not known registered after its first flush")
	}
}

func TestAFlushThatFailsHoldsTheAcksOnceMoreThenGivesThemUp(t *testing.T) {
	h := testHub(t, Config{})
	c := &liveConn{hub: h, user: "ann", device: "phone"}
	h.acks.add(c, []redisstore.AckItem{{Conv: "g", Seq: 3, Epoch: 1}}, nil, nil, 1000)
	_ = h.store.Client().Close() // every call fails from here on
	h.acks.flush()
	if p := h.acks.pending[ackKey{"ann", "phone"}]; p == nil || !p.retried || p.items["g"].Seq != 3 {
		t.Fatalf("after a failed flush the pending acks are %+v, want them held again", p)
	}
	h.acks.flush()
	if len(h.acks.pending) != 0 || h.acks.items != 0 {
		t.Fatalf("after a second failed flush %d devices are still held", len(h.acks.pending))
	}
	if got := testutil.ToFloat64(h.metrics.ackFlush.dropped); got != 1 {
		t.Fatalf("dropped %v, want 1", got)
	}
}

func TestFullHeldAcksAskForAnEarlyFlushAndRefuseMore(t *testing.T) {
	for _, tc := range []struct {
		name    string
		devices int
		items   int
		closed  bool
		room    bool
	}{
		{"empty", 0, 0, false, true},
		{"conversations full", 1, maxPendingAckItems, false, false},
		{"devices full", maxPendingAckDevices, 0, false, false},
		{"closed", 0, 0, true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := &ackFlusher{pending: map[ackKey]*pendingAcks{}, early: make(chan struct{}, 1), items: tc.items, closed: tc.closed}
			for i := range tc.devices {
				f.pending[ackKey{fmt.Sprint("u", i), "d"}] = &pendingAcks{}
			}
			if got := f.room(1); got != tc.room {
				t.Fatalf("room %v, want %v", got, tc.room)
			}
			if asked := len(f.early) == 1; asked == tc.room {
				t.Fatalf("early flush asked %v with room %v", asked, tc.room)
			}
		})
	}
}
