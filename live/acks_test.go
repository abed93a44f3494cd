package live

import (
	"fmt"
	"testing"
	"time"

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
