package expiry

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/offlinebox/offlinebox/internal/testenv"
	"github.com/offlinebox/offlinebox/redisstore"
	"github.com/offlinebox/offlinebox/schemas"
)

func TestDropHistoryDropsTheMonthsPastTheHistoryRetention(t *testing.T) {
	rdb, prefix := testenv.Redis(t)
	s, err := redisstore.New(rdb, redisstore.Config{Prefix: prefix})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	ch, _ := testenv.History(t)
	month := func(y int, m time.Month) time.Time { return time.Date(y, m, 10, 0, 0, 0, 0, time.UTC) }
	written := []time.Time{month(2029, 1), month(2029, 6), month(2029, 12), month(2030, 5)}
	var recs []*schemas.Sequenced
	for i, at := range written {
		recs = append(recs, &schemas.Sequenced{Seq: uint64(i + 1), Epoch: 1, WriteTimeMs: at.UnixMilli(),
			Message: &schemas.Message{ConvId: "c1", ConvType: schemas.ConvType_CONV_TYPE_GROUP, Sender: "a", Kind: schemas.Kind_KIND_MESSAGE}})
	}
	if err := ch.InsertBatch(ctx, recs); err != nil {
		t.Fatal(err)
	}
	// A year before now is 2029-07-01: January and June 2029 have ended.
	now := time.Date(2030, 7, 1, 0, 0, 0, 0, time.UTC)
	w, err := New(Config{Clock: func() time.Time { return now }}, s, ch)
	if err != nil {
		t.Fatal(err)
	}
	n, err := w.DropHistory(ctx)
	if err != nil {
		t.Fatal(err)
	}
	parts, err := ch.Partitions(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var left []string
	for _, p := range parts {
		left = append(left, p.ID)
	}
	if n != 2 || !slices.Equal(left, []string{"202912", "203005"}) {
		t.Fatalf("dropped %d, left %v; want 2 dropped and 202912, 203005 left", n, left)
	}
	if v := counterValue(t, w.m.removed.WithLabelValues(whatPartitions)); v != 2 {
		t.Fatalf("partitions metric %v, want 2", v)
	}
}
