package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/offlinebox/offlinebox/schemas"
)

func TestRepairEvictedRebuildsFromClickHouseAndReleasesTheHold(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	st := newTestStores(t)
	recs := []*schemas.Sequenced{{Seq: 1, Epoch: 1, WriteTimeMs: time.Now().UnixMilli(), Message: &schemas.Message{
		ClientMsgId: "j", ConvId: "g-ev", ConvType: schemas.ConvType_CONV_TYPE_GROUP, Sender: "alice",
		Kind: schemas.Kind_KIND_MEMBER_JOIN, Recipients: []string{"alice", "bob"}}}}
	if err := st.ch.InsertBatch(ctx, recs); err != nil {
		t.Fatal(err)
	}
	if _, err := st.redis.HoldEvicted(ctx, "redis at test evicted 3 keys since it was verified"); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := runRepairEvicted(ctx, st.flags(t), &out); err != nil {
		t.Fatalf("repair-evicted: %v\n%s", err, out.String())
	}
	for _, w := range []string{"held: redis at test evicted 3 keys", "1 conversations rebuilt from ClickHouse", "users' list indexes rebuilt", "eviction hold released"} {
		if !strings.Contains(out.String(), w) {
			t.Errorf("output lacks %q:\n%s", w, out.String())
		}
	}
	if _, held, err := st.redis.EvictionHold(ctx); err != nil || held {
		t.Fatalf("still held (%v) after the repair", err)
	}
	if head, err := st.redis.ConvHeads(ctx, []string{"g-ev"}); err != nil || head["g-ev"].Seq != 1 {
		t.Fatalf("g-ev after the repair: %+v %v, want seq 1 rebuilt", head, err)
	}
	seen, err := st.redis.EvictionsSeen(ctx)
	if err != nil || len(seen) == 0 {
		t.Fatalf("evictions verified %v %v, want the server's count of now", seen, err)
	}
}
