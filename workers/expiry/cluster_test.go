package expiry

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/offlinebox/offlinebox/internal/testenv"
	"github.com/offlinebox/offlinebox/redisstore"
	"github.com/offlinebox/offlinebox/schemas"
)

func TestSweepOnRedisClusterVisitsEveryMaster(t *testing.T) {
	rdb, prefix := testenv.RedisCluster(t)
	s, err := redisstore.New(rdb, redisstore.Config{Prefix: prefix})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	now := time.Now().Add(40 * day)
	// Enough conversations that their slots spread over the 3 masters.
	const convs = 12
	for i := range convs {
		conv := fmt.Sprint("c", i)
		for j, age := range []time.Duration{35 * day, 10 * day} {
			m := &schemas.Message{ClientMsgId: fmt.Sprint(j), ConvId: conv, ConvType: schemas.ConvType_CONV_TYPE_GROUP,
				Sender: "alice", Kind: schemas.Kind_KIND_MESSAGE, Body: []byte("x")}
			if _, err := s.Sequence(ctx, conv, []*schemas.Message{m}, nil, now.Add(-age).UnixMilli()); err != nil {
				t.Fatal(err)
			}
		}
	}
	nodes, err := s.ScanNodes(ctx)
	if err != nil || len(nodes) != 3 {
		t.Fatalf("scan nodes %v (err %v), want the 3 masters", nodes, err)
	}
	w, err := New(Config{ScanCount: 5, Clock: func() time.Time { return now }}, s, nil)
	if err != nil {
		t.Fatal(err)
	}
	got, err := w.SweepOnce(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got.Timeline != convs {
		t.Fatalf("removed %d timeline entries, want one per conversation (%d)", got.Timeline, convs)
	}
	for i := range convs {
		tl, _ := rdb.LRange(ctx, s.Keys().Timeline(fmt.Sprint("c", i)), 0, -1).Result()
		if e, err := redisstore.DecodeEntry([]byte(tl[0]), fmt.Sprint("c", i), 0); len(tl) != 1 || err != nil || e.Seq != 2 {
			t.Fatalf("c%d timeline holds %d entries, want only seq 2", i, len(tl))
		}
	}
	if c := counterValue(t, w.m.cycles); c != 3 {
		t.Fatalf("completed %v sweep cycles, want one per master (3)", c)
	}
}
