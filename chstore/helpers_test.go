package chstore_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"

	"github.com/offlinebox/offlinebox/chstore"
	"github.com/offlinebox/offlinebox/internal/testenv"
	"github.com/offlinebox/offlinebox/schemas"
)

// newStore returns a migrated Store on a database of its own.
func newStore(t *testing.T) *chstore.Store {
	t.Helper()
	s, _ := newStoreConn(t)
	return s
}

// newStoreConn is newStore with a connection of its own to the database.
func newStoreConn(t *testing.T) (*chstore.Store, driver.Conn) {
	t.Helper()
	conn, db := testenv.ClickHouse(t)
	s, err := chstore.Open(context.Background(), chstore.Config{Addr: testenv.ClickHouseAddr(t), Database: db})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	if err := s.Migrate(testCtx(t)); err != nil {
		t.Fatal(err)
	}
	return s, conn
}

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// fixture builds the messages of conv with seqs from..to, written at
// writeAt(seq). Contents vary with seq so a wrong row is noticed.
func fixture(conv string, from, to uint64, writeAt func(seq uint64) time.Time) []*schemas.Sequenced {
	var out []*schemas.Sequenced
	for seq := from; seq <= to; seq++ {
		m := &schemas.Message{
			ClientMsgId: fmt.Sprintf("cm-%s-%d", conv, seq),
			ConvId:      conv,
			ConvType:    schemas.ConvType_CONV_TYPE_GROUP,
			Sender:      fmt.Sprintf("u%d", seq%3),
			Kind:        schemas.Kind_KIND_MESSAGE,
			ContentType: "text/plain",
			Body:        []byte(fmt.Sprintf("body %d of %s \x00\xff", seq, conv)),
			SendTimeMs:  writeAt(seq).UnixMilli() - 5,
			// every QoS, so reads that drop it fail proto.Equal
			Qos: schemas.QoS(seq % 3),
		}
		if seq%4 == 0 {
			m.Mentions = []string{fmt.Sprintf("u%d", (seq+1)%3)}
		}
		if seq%10 == 0 {
			m.MentionAll = true
		}
		out = append(out, &schemas.Sequenced{Message: m, Seq: seq, Epoch: 77, WriteTimeMs: writeAt(seq).UnixMilli()})
	}
	return out
}

// writtenAt spaces messages a second apart from base.
func writtenAt(base time.Time) func(uint64) time.Time {
	return func(seq uint64) time.Time { return base.Add(time.Duration(seq) * time.Second) }
}

func seqsOf(msgs []*schemas.Sequenced) []uint64 {
	out := make([]uint64, len(msgs))
	for i, m := range msgs {
		out[i] = m.GetSeq()
	}
	return out
}

// timeText renders Unix seconds as ClickHouse prints a DateTime('UTC').
func timeText(sec int64) string {
	return time.Unix(sec, 0).UTC().Format(time.DateTime)
}
