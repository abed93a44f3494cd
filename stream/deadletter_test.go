package stream

import (
	"bytes"
	"context"
	"math/rand/v2"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/offlinebox/offlinebox/internal/testenv"
	"github.com/offlinebox/offlinebox/schemas"
)

// A dead letter the dead-letter topic refuses as too large would be
// retried forever, holding its partition; it goes without its value
// instead, its headers still naming where the original is.
func TestRunner_DeadLetterTooLargeForTheDeadTopicGoesWithoutItsValue(t *testing.T) {
	_, addrs := testenv.Kafka(t, 1, "in", "dead")
	adm := admin(t, addrs)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	limit := "2000"
	if _, err := adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{{Op: kadm.SetConfig, Name: "max.message.bytes", Value: &limit}}, "dead"); err != nil {
		t.Fatal(err)
	}
	big := make([]byte, 5000)
	_, _ = rand.NewChaCha8([32]byte{7}).Read(big) // random: it does not compress below the limit
	prod, err := NewProducer(addrs)
	if err != nil {
		t.Fatal(err)
	}
	defer prod.Close()
	recs := []*kgo.Record{
		{Topic: "in", Key: []byte("k0"), Value: append([]byte("bad-big:"), big...), Headers: []kgo.RecordHeader{{Key: "trace", Value: []byte("t0")}}},
		{Topic: "in", Key: []byte("k1"), Value: []byte("bad-small")},
		{Topic: "in", Key: []byte("k2"), Value: []byte("ok")},
	}
	if err := prod.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}

	start(t, testConfig(t, addrs, "dlqbig", "in"), HandlerFunc(func(_ context.Context, recs []*kgo.Record) ([]DeadLetter, error) {
		var dead []DeadLetter
		for _, r := range recs {
			if bytes.HasPrefix(r.Value, []byte("bad")) {
				dead = append(dead, DeadLetter{Record: r, Reason: "poison",
					Headers: []kgo.RecordHeader{{Key: schemas.HeaderDeadCode, Value: []byte("invalid")}}})
			}
		}
		return dead, nil
	}))
	waitCommittedToEnd(t, adm, "dlqbig", "in")

	got := readAll(t, addrs, "dead", 2)
	byKey := map[string]*kgo.Record{}
	for _, r := range got {
		byKey[string(r.Key)] = r
	}
	bare, small := byKey["k0"], byKey["k1"]
	if bare == nil || small == nil {
		t.Fatalf("dead letters %v, want those of k0 and k1", byKey)
	}
	h := headers(bare)
	if len(bare.Value) != 0 || h[schemas.HeaderDeadValueOmitted] != strconv.Itoa(len(recs[0].Value)) ||
		h[schemas.HeaderDeadReason] != "poison" || h[schemas.HeaderDeadOffset] != "0" || h["trace"] != "" ||
		h[schemas.HeaderDeadCode] != "invalid" {
		t.Errorf("the large dead letter: %d bytes of value, headers %v; want no value, its size, reason, offset and the handler's headers only", len(bare.Value), h)
	}
	if string(small.Value) != "bad-small" || headers(small)[schemas.HeaderDeadValueOmitted] != "" ||
		headers(small)[schemas.HeaderDeadCode] != "invalid" {
		t.Errorf("the small dead letter lost its value: %q %v", small.Value, headers(small))
	}
}
