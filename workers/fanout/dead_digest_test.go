package fanout

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"google.golang.org/protobuf/proto"

	"github.com/offlinebox/offlinebox/internal/testenv"
	"github.com/offlinebox/offlinebox/redisstore"
	"github.com/offlinebox/offlinebox/schemas"
	"github.com/offlinebox/offlinebox/seal"
	"github.com/offlinebox/offlinebox/stream"
)

// With a key ring, the dead letter of a refused record (a stranger
// writing in a direct conversation) reaches im.deadletter without its
// body: no byte of the body's text is in the letter's value, the body's
// SHA-256 is in dead-body-digest, and sender, conv_id, client_msg_id,
// seq 0 and the public code are all still there for the push stage to
// tell the sender. Without a key ring the letter keeps the record as it
// was, and no digest.
func TestADeadLetterKeepsNoPlaintextBodyWhenBodiesAreSealed(t *testing.T) {
	const secret = "the launch code is 0000-secret"
	for _, sealed := range []bool{true, false} {
		name := map[bool]string{true: "sealing on", false: "sealing off"}[sealed]
		t.Run(name, func(t *testing.T) {
			rdb, prefix := testenv.Redis(t)
			_, addrs := testenv.Kafka(t, 4, schemas.TopicMessages, schemas.TopicSequenced, schemas.TopicDeadLetter)
			cfg := Config{}
			if sealed {
				plain, err := redisstore.New(rdb, redisstore.Config{Prefix: prefix})
				if err != nil {
					t.Fatal(err)
				}
				cfg.Store.Sealer = seal.NewSealer(sealTestRing(t), plain, 0)
			}
			h := newHarnessOn(t, rdb, prefix, addrs, cfg)
			h.runner(h.fanout(nil))
			refused := msg("d", "stranger", "c", to("a"))
			refused.Body = []byte(secret)
			h.produce(records(msg("d", "hi", "a", to("b")), refused))
			deadline := time.Now().Add(20 * time.Second)
			for !h.committedToEnd() && time.Now().Before(deadline) {
				time.Sleep(50 * time.Millisecond)
			}
			letters := h.deadLetters()
			if len(letters) != 1 {
				t.Fatalf("%d dead letters, want the refused record's alone", len(letters))
			}
			l := letters[0]
			var m schemas.Message
			if err := proto.Unmarshal(l.Value, &m); err != nil {
				t.Fatalf("the letter's value does not decode: %v", err)
			}
			if m.GetSender() != "c" || m.GetConvId() != "d" || m.GetClientMsgId() != "stranger" {
				t.Errorf("the letter names sender %q, conv %q, id %q; want c, d, stranger", m.GetSender(), m.GetConvId(), m.GetClientMsgId())
			}
			if seq, _ := header(l, schemas.HeaderDeadSeq); seq != "0" {
				t.Errorf("dead-seq %q, want 0 (its sender is told)", seq)
			}
			if code, _ := header(l, schemas.HeaderDeadCode); code != schemas.RefusalNotAMember {
				t.Errorf("dead-code %q, want %s", code, schemas.RefusalNotAMember)
			}
			digest, has := header(l, schemas.HeaderDeadBodyDigest)
			sum := sha256.Sum256([]byte(secret))
			inClear := bytes.Contains(l.Value, []byte(secret)) || bytes.Contains(l.Value, []byte("secret"))
			if sealed {
				if inClear || len(m.GetBody()) != 0 {
					t.Errorf("with sealing on the letter keeps the body in the clear: %q", l.Value)
				}
				if want := "sha256:" + hex.EncodeToString(sum[:]); digest != want {
					t.Errorf("dead-body-digest %q, want %q", digest, want)
				}
				return
			}
			if !inClear || string(m.GetBody()) != secret || has {
				t.Errorf("with sealing off the letter is changed: body %q, digest header %q (%v)", m.GetBody(), digest, has)
			}
		})
	}
}

// A letter's copy leaves out what it must whatever the record: a value
// that does not decode is left out whole (with its digest), and a record
// of nothing but a body is written as an empty value, never as the
// record (a nil Value would fall back to it).
func TestADigestedLetterLeavesOutTheBodyOrTheWholeValue(t *testing.T) {
	onlyBody, err := proto.Marshal(&schemas.Message{Body: []byte("secret")})
	if err != nil {
		t.Fatal(err)
	}
	undecodable := append([]byte{0xff, 0xff, 0xff}, "secret"...)
	cases := []struct {
		name     string
		value    []byte
		digested []byte // what the digest is of
	}{
		{"a message", record(msg("d", "x", "c", func(m *schemas.Message) { m.Body = []byte("secret") })).Value, []byte("secret")},
		{"nothing but a body", onlyBody, []byte("secret")},
		{"a value that does not decode", undecodable, undecodable},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			d := digestBody(stream.DeadLetter{Record: &kgo.Record{Value: tc.value}, Headers: refusedHeaders(schemas.RefusalInvalid)})
			if d.Value == nil || bytes.Contains(d.Value, []byte("secret")) {
				t.Errorf("the copy is %q (nil %v), want one without the body", d.Value, d.Value == nil)
			}
			sum := sha256.Sum256(tc.digested)
			got, _ := header(&kgo.Record{Headers: d.Headers}, schemas.HeaderDeadBodyDigest)
			if want := "sha256:" + hex.EncodeToString(sum[:]); got != want {
				t.Errorf("digest %q, want %q", got, want)
			}
			if code, _ := header(&kgo.Record{Headers: d.Headers}, schemas.HeaderDeadCode); code != schemas.RefusalInvalid {
				t.Errorf("the letter lost its code: %q", code)
			}
		})
	}
}
