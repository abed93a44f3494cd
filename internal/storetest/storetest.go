package storetest

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/offlinebox/offlinebox/schemas"
)

// Day is a retention day.
const Day = 24 * time.Hour

// Now is the fake "now" of the expiry and rebuild tests: retention is
// measured against it, never against the machine's clock.
var Now = time.Date(2031, 3, 14, 12, 0, 0, 0, time.UTC)

// Msg is a record of conv from alice: a text message, or (kind other than
// a message) a membership change naming alice, bob and carol; a direct
// conversation's record is for bob.
func Msg(conv string, ct schemas.ConvType, kind schemas.Kind, id string) *schemas.Message {
	m := &schemas.Message{ClientMsgId: id, ConvId: conv, ConvType: ct, Sender: "alice",
		Kind: kind, ContentType: "text/plain", Body: []byte("body of " + id)}
	switch {
	case ct == schemas.ConvType_CONV_TYPE_DIRECT:
		m.Recipients = []string{"bob"}
	case kind != schemas.Kind_KIND_MESSAGE:
		m.Recipients, m.Body = []string{"alice", "bob", "carol"}, nil
	}
	return m
}

// Meta reads a conversation's head seq and first kept seq from its meta
// hash (Keys.ConvMeta); absent fields read as 0.
func Meta(t testing.TB, rdb redis.UniversalClient, metaKey string) (seq, first uint64) {
	t.Helper()
	v, err := rdb.HMGet(context.Background(), metaKey, "seq", "first").Result()
	if err != nil {
		t.Fatal(err)
	}
	str := func(v any) string { s, _ := v.(string); return s }
	seq, _ = strconv.ParseUint(str(v[0]), 10, 64)
	first, _ = strconv.ParseUint(str(v[1]), 10, 64)
	return seq, first
}
