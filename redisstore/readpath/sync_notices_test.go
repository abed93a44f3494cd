package readpath

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/offlinebox/offlinebox/internal/testenv"
	"github.com/offlinebox/offlinebox/schemas"

	"github.com/offlinebox/offlinebox/redisstore"
)

func TestNoticeCopyCountsAsZCountOfWhatExpiryLeft(t *testing.T) {
	c := noticeCopy{epoch: 9, from: 3, upTo: 40, seqs: []uint64{3, 5, 6, 20, 40}}
	for _, tc := range []struct {
		lo, hi, first, want uint64
	}{
		{1, 40, 1, 5},
		{4, 6, 1, 2},
		{5, 5, 1, 1},
		{7, 19, 1, 0},
		{1, 40, 6, 3},  // expiry took 3 and 5
		{1, 40, 41, 0}, // and everything
		{21, 20, 1, 0},
	} {
		if got := c.count(tc.lo, tc.hi, tc.first); got != tc.want {
			t.Errorf("count [%d, %d] above first %d = %d, want %d", tc.lo, tc.hi, tc.first, got, tc.want)
		}
	}
}

// TestSyncCountsSmallGroupNoticesFromItsCopyAsRedisWould syncs the same
// member of a small group through a store that keeps notice copies and
// through fresh stores that ask Redis every time, while notices are
// added, the window is expired past the member's read seq and the epoch
// changes: every answer is the same, and once a sync took the copy, one
// it covers counts no notice in Redis.
func TestSyncCountsSmallGroupNoticesFromItsCopyAsRedisWould(t *testing.T) {
	ctx := context.Background()
	rdb, prefix := testenv.Redis(t)
	var zcounts atomic.Int64
	rdb.AddHook(commandHook(func(cmd redis.Cmder) {
		if strings.EqualFold(cmd.Name(), "zcount") {
			zcounts.Add(1)
		}
	}))
	s, err := newRig(rdb, redisstore.Config{Prefix: prefix})
	if err != nil {
		t.Fatal(err)
	}
	rs := newReadSeed(t, s)
	rs.group("g", "ann", "bob", "cid")
	joins := 0
	grow := func(n int) (last uint64) {
		for i := range n {
			joins++
			rs.send(&schemas.Message{ConvId: "g", ConvType: group, Sender: "ann",
				Kind: schemas.Kind_KIND_MEMBER_JOIN, Recipients: []string{fmt.Sprintf("u%d", joins)}})
			last = rs.say("g", group, "bob", "", fmt.Sprint("m", i))
		}
		return last
	}
	grow(6)
	if _, err := s.ApplyReads(ctx, []redisstore.ReadMark{{User: "cid", Conv: "g", Seq: 4}}); err != nil {
		t.Fatal(err)
	}
	sync := func(st *rig) (string, int64) {
		t.Helper()
		before := zcounts.Load()
		res, err := st.Sync(ctx, syncReq("cid", "phone", 50, 1<<20))
		if err != nil {
			t.Fatal(err)
		}
		return render(res), zcounts.Load() - before
	}
	same := func(step string) {
		t.Helper()
		fresh, err := newRig(rdb, redisstore.Config{Prefix: prefix})
		if err != nil {
			t.Fatal(err)
		}
		want, _ := sync(fresh)
		if got, _ := sync(s); got != want {
			t.Fatalf("%s: with the copy\n%s\nwithout\n%s", step, got, want)
		}
		if !strings.Contains(want, "unread=") {
			t.Fatalf("%s: no conversation in %s", step, want)
		}
		// One sync may take the copy the first could not use.
		for range 2 {
			if got, _ := sync(s); got != want {
				t.Fatalf("%s: again\n%s\nwant\n%s", step, got, want)
			}
		}
		if got, n := sync(s); got != want || n != 0 {
			t.Fatalf("%s: then %d ZCOUNTs, answer\n%s\nwant none and\n%s", step, n, got, want)
		}
	}
	same("first")
	grow(4)
	same("notices added above the copy")

	exp, err := s.ExpireConversation(ctx, "g", time.Now(), redisstore.Retention{}, 9)
	if err != nil || exp.Timeline != 9 {
		t.Fatalf("expiry: %+v (err %v); want 9 records gone", exp, err)
	}
	same("the window expired past the read seq")

	// Another epoch whose notices differ below the copy's reach (what a
	// rebuild from other history could leave).
	meta, err := rdb.HMGet(ctx, s.keys.ConvMeta("g"), redisstore.MetaEpoch, redisstore.MetaSeq).Result()
	if err != nil {
		t.Fatal(err)
	}
	top := redisstore.ReplyUint(meta[1])
	if err := rdb.HSet(ctx, s.keys.ConvMeta("g"), redisstore.MetaEpoch, redisstore.ReplyUint(meta[0])+1).Err(); err != nil {
		t.Fatal(err)
	}
	if err := rdb.ZAdd(ctx, s.keys.Notices("g"), redis.Z{Score: float64(top - 1), Member: fmt.Sprint(top - 1)}).Err(); err != nil {
		t.Fatal(err)
	}
	same("a new epoch")
}
