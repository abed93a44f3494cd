package redisstore

import (
	"context"
	"fmt"
	"testing"
)

func TestReadReceiptRaisesReadSeqRecomputesUnreadAndClearsMentions(t *testing.T) {
	s := readTestStore(t, 100)
	rs := newReadSeed(t, s)
	rs.group("g", "bob", "ann")
	var mentions []uint64
	for i := range 10 {
		if i%3 == 0 {
			mentions = append(mentions, rs.say("g", group, "bob", "", "@ann", "ann"))
		} else {
			rs.say("g", group, "bob", "", fmt.Sprint(i))
		}
	}
	ctx := context.Background()
	ib := func() (string, int64) {
		h := s.rdb.HGetAll(ctx, s.keys.Inbox("ann")).Val()
		st := inboxState{fields: h}
		return fmt.Sprintf("l=%s r=%s u=%d", h["g:l"], h["g:r"], st.unread("g")), s.rdb.ZCard(ctx, s.keys.Mentions("ann")).Val()
	}
	steps := []struct {
		seq      uint64
		want     string
		mentions int64
	}{
		{mentions[1], fmt.Sprintf("l=11 r=%d u=%d", mentions[1], 11-mentions[1]), 2},
		{mentions[1], fmt.Sprintf("l=11 r=%d u=%d", mentions[1], 11-mentions[1]), 2}, // replay
		{3, fmt.Sprintf("l=11 r=%d u=%d", mentions[1], 11-mentions[1]), 2},           // older receipt
		{11, "l=11 r=11 u=0", 0},
	}
	for i, st := range steps {
		if _, err := s.ApplyReads(ctx, []ReadMark{{User: "ann", Conv: "g", Seq: st.seq}}); err != nil {
			t.Fatal(err)
		}
		got, n := ib()
		if got != st.want || n != st.mentions {
			t.Fatalf("step %d (read %d): %s with %d mentions, want %s with %d", i, st.seq, got, n, st.want, st.mentions)
		}
	}
}
