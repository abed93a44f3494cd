package api

import (
	"context"
	"fmt"
	"github.com/offlinebox/offlinebox/wire"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"google.golang.org/protobuf/proto"

	obclient "github.com/offlinebox/offlinebox/client"
	"github.com/offlinebox/offlinebox/schemas"
)

// internals are what a sender must never read in a refusal: other users'
// ids, key names, the scripts' refusal codes, store errors, seqs.
var internals = []string{"alice", "carol", "OBHELD", "{c:", ":held", "WRONGTYPE", "seq ", "epoch", "master key"}

// TestASenderIsToldOnlyOfRecordsThatGotNoSeqAndInPlainWords: of bob's
// records, one is sequenced but cannot reach carol's broken inbox (its
// dead letter names carol and the Redis error), one is refused (a plain
// member removing the owner: the reason names alice), and the
// dead-letter topic holds letters written before letters carried their
// code (one of a sequenced record, one naming a held conversation's key)
// and one that says its record got a seq. The live rejected frames and
// GET /v1/rejections name only the two refusals, each by its public code
// and one sentence, and no internal.
func TestASenderIsToldOnlyOfRecordsThatGotNoSeqAndInPlainWords(t *testing.T) {
	le := newLiveEnv(t, Config{})
	le.produce(founding("team", "alice", "bob", "carol"))
	bobTok := le.token("bob", "phone")
	le.waitMaxSeq(bobTok, "team", 1)
	bob := le.device(0, "bob", "phone")
	bob.connect()

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	inbox := le.store.Keys().Inbox("carol")
	if err := le.store.Client().Del(ctx, inbox).Err(); err != nil {
		t.Fatal(err)
	}
	if err := le.store.Client().Set(ctx, inbox, "someone's string", 0).Err(); err != nil {
		t.Fatal(err)
	}
	le.produceDead(ctx, bob, "old-sequenced", "sequenced as seq 9 of team (epoch 1), but its inbox update failed for good for 1 recipients: carol: WRONGTYPE")
	le.produceDead(ctx, bob, "old-held", "not sequenced: the sequencing of team can never succeed: OBHELD P{c:team}:held is set")
	le.produceDead(ctx, bob, "new-sequenced", "sequenced as seq 3 of team (epoch 1), but alice's inbox failed: WRONGTYPE",
		kgo.RecordHeader{Key: schemas.HeaderDeadSeq, Value: []byte("3")})
	le.produce(textMsg("team", "hello", "bob"))
	le.produce(&schemas.Message{ClientMsgId: "remove-owner", ConvId: "team", ConvType: schemas.ConvType_CONV_TYPE_GROUP,
		Sender: "bob", Kind: schemas.Kind_KIND_MEMBER_LEAVE, Recipients: []string{"alice"}})

	want := map[string]string{"old-held": schemas.RefusalUnavailable, "remove-owner": schemas.RefusalNotAllowed}
	got := map[string]obclient.Frame{}
	bob.until("rejected", func(f obclient.Frame) bool {
		got[f.ClientMsgID] = f
		return f.ClientMsgID == "remove-owner"
	})
	for _, f := range bob.quiet(time.Second) {
		if f.Type == "rejected" {
			got[f.ClientMsgID] = f
		}
	}
	if len(got) != len(want) {
		var told []string
		for _, f := range got {
			told = append(told, string(f.Raw))
		}
		t.Fatalf("bob was told of %d refusals, want %v alone: %s", len(got), want, strings.Join(told, " "))
	}
	for id, code := range want {
		f := got[id]
		if f.Code != code || f.Reason != schemas.RefusalSentence(code) || f.ConvID != "team" || f.AtMS == 0 {
			t.Errorf("the rejected frame of %s is %s, want code %s and its sentence", id, f.Raw, code)
		}
		for _, bad := range internals {
			if strings.Contains(string(f.Raw), bad) {
				t.Errorf("the rejected frame of %s shows %q: %s", id, bad, f.Raw)
			}
		}
	}

	var list struct {
		Rejections []wire.Rejection `json:"rejections"`
	}
	raw := le.callOK(200, "GET", "/v1/rejections", bobTok, nil, &list)
	if len(list.Rejections) != len(want) {
		t.Fatalf("bob's list is %s, want %v alone", raw, want)
	}
	for _, rj := range list.Rejections {
		if code, ok := want[rj.ClientMsgID]; !ok || rj.Code != code || rj.Reason != schemas.RefusalSentence(code) {
			t.Errorf("listed %+v, want one of %v by its code and sentence", rj, want)
		}
	}
	for _, bad := range internals {
		if strings.Contains(string(raw), bad) {
			t.Errorf("GET /v1/rejections shows %q: %s", bad, raw)
		}
	}
	le.waitMaxSeq(bobTok, "team", 2) // hello was sequenced, and is no refusal
}

// produceDead writes a dead letter of one of d's records to the
// dead-letter topic as a runner does, with reason and the headers given.
func (le *liveEnv) produceDead(ctx context.Context, d *device, id, reason string, extra ...kgo.RecordHeader) {
	le.t.Helper()
	v, err := proto.Marshal(textMsg("team", id, d.user))
	if err != nil {
		le.t.Fatal(err)
	}
	hs := append([]kgo.RecordHeader{{Key: schemas.HeaderDeadReason, Value: []byte(reason)},
		{Key: schemas.HeaderDeadTopic, Value: []byte(schemas.TopicMessages)},
		{Key: schemas.HeaderDeadPartition, Value: []byte("0")},
		{Key: schemas.HeaderDeadOffset, Value: []byte(fmt.Sprint(0))}}, extra...)
	rec := &kgo.Record{Topic: schemas.TopicDeadLetter, Key: []byte("team"), Value: v, Headers: hs}
	if err := le.producer.ProduceSync(ctx, rec).FirstErr(); err != nil {
		le.t.Fatal(err)
	}
}
