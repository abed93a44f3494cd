package fanout

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/offlinebox/offlinebox/internal/testenv"
	"github.com/offlinebox/offlinebox/redisstore"
	"github.com/offlinebox/offlinebox/schemas"
	"github.com/offlinebox/offlinebox/seal"
)

// racingSealer seals as its Sealer does, and before each body it seals
// lets another writer sequence one message of the conversation: a second
// process that keeps sequencing it at the same time.
type racingSealer struct {
	redisstore.Sealer
	t     *testing.T
	other *redisstore.Store
	n     int // seals so far (one conversation's are never concurrent)
}

func (r *racingSealer) SealBody(ctx context.Context, conv string, epoch, seq uint64, m *schemas.Message) (*schemas.Message, error) {
	r.n++
	other := msg(conv, fmt.Sprint("other-", r.n), "b", to("a"))
	// not t.Fatal: this runs on a fanout goroutine
	if _, err := r.other.Sequence(ctx, conv, []*schemas.Message{other}, nil, time.Now().UnixMilli()); err != nil {
		r.t.Errorf("the other writer: %v", err)
		return nil, err
	}
	return r.Sealer.SealBody(ctx, conv, epoch, seq, m)
}

// A record sealed sequencing gives up on (another writer kept moving the
// conversation) is dead-lettered with its reason and the batch commits:
// it is not a store that is down, and it is not retried without end.
func TestRecordsAWriterKeepsRacingAreDeadLetteredWithTheirReason(t *testing.T) {
	rdb, prefix := testenv.Redis(t)
	_, addrs := testenv.Kafka(t, 4, schemas.TopicMessages, schemas.TopicSequenced, schemas.TopicDeadLetter)
	plain, err := redisstore.New(rdb, redisstore.Config{Prefix: prefix})
	if err != nil {
		t.Fatal(err)
	}
	ring := sealTestRing(t)
	other, err := redisstore.New(rdb, redisstore.Config{Prefix: prefix, Sealer: seal.NewSealer(ring, plain, 0)})
	if err != nil {
		t.Fatal(err)
	}
	cfg := Config{}
	cfg.Store.Sealer = &racingSealer{Sealer: seal.NewSealer(ring, plain, 0), t: t, other: other}
	h := newHarnessOn(t, rdb, prefix, addrs, cfg)
	f := h.fanout(nil)
	raced := records(msg("d", "raced-1", "a", to("b")), msg("d", "raced-2", "a", to("b")))
	dead := handle(t, f, raced)
	if len(dead) != len(raced) {
		t.Fatalf("%d dead letters, want the %d raced records", len(dead), len(raced))
	}
	for i, d := range dead {
		if d.Record != raced[i] || !strings.Contains(d.Reason, redisstore.ErrSealRaced.Error()) {
			t.Fatalf("dead letter %d: %+v, want raced record %d with the race as its reason", i, d, i)
		}
	}
	if got := h.sequencedOnTopic()["d"]; len(got) != 0 {
		t.Fatalf("im.sequenced holds seqs %v of d: a raced record was produced", got)
	}
}
