package api

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"github.com/offlinebox/offlinebox/wire"
	"os"
	"path/filepath"
	"testing"

	"github.com/offlinebox/offlinebox/redisstore/readpath"
	"github.com/offlinebox/offlinebox/schemas"
)

// The Go client decodes the server's answers with a reader of its own,
// checked against encoding/json on answers the server wrote: the files
// of client/testdata/server. This test keeps them what the encoder writes
// today; -update-client-answers rewrites them.
var updateClientAnswers = flag.Bool("update-client-answers", false, "rewrite client/testdata/server from the encoder")

const clientAnswersDir = "../client/testdata/server"

// clientAnswerMessages are awkwardMessages and chat of the storm's kind:
// Chinese and English text, a binary body, mentions.
func clientAnswerMessages() []*schemas.Sequenced {
	ms := awkwardMessages()
	chat := []string{"今天下午三点开会，请准时参加。", "收到，没问题 👍", "the project is on track, thanks", "明天讨论方案 <b>重要</b> & \"引用\"\n第二行"}
	for i, text := range chat {
		m := &schemas.Message{ClientMsgId: "c-" + text[:3], ConvId: "g-chat", ConvType: schemas.ConvType_CONV_TYPE_GROUP, Sender: "u1",
			Kind: schemas.Kind_KIND_MESSAGE, ContentType: "text/plain", Body: []byte(text), SendTimeMs: 1_700_000_000_000}
		if i == 1 {
			m.Mentions = []string{"u2", "u3"}
		}
		ms = append(ms, &schemas.Sequenced{Message: m, Seq: uint64(100 + i), Epoch: 2, WriteTimeMs: 1_700_000_000_100})
	}
	ms = append(ms, &schemas.Sequenced{Message: &schemas.Message{ClientMsgId: "img", ConvId: "g-chat", Sender: "u2", Kind: schemas.Kind_KIND_MESSAGE,
		ContentType: "image/png", Body: []byte{0x89, 'P', 'N', 'G', 0, 0xff}}, Seq: 120, Epoch: 2})
	return ms
}

func clientAnswers(t *testing.T) map[string][]byte {
	t.Helper()
	ms := clientAnswerMessages()
	res := &readpath.SyncResult{
		Resync:   true,
		Mentions: []readpath.SyncMention{{Conv: "g<1>", All: true, Message: ms[2]}, {Conv: "g-chat", Message: ms[len(ms)-4]}},
		Convs: []readpath.SyncConv{
			{Conv: "g<1>", Type: schemas.ConvType_CONV_TYPE_GROUP, Large: true, Epoch: 3, MaxSeq: 99, Unread: 12, Messages: ms[:6], Older: 2,
				HasMore: true, Gap: &readpath.SeqRange{From: 5, To: ^uint64(0)}},
			{Conv: "d-a-b", Type: schemas.ConvType_CONV_TYPE_DIRECT, Epoch: 1, MaxSeq: 7, Messages: ms[6:13], Rebase: true,
				RebaseReason: readpath.RebaseResync, Incomplete: true},
			{Conv: "g-chat", Type: schemas.ConvType_CONV_TYPE_GROUP, Epoch: 2, MaxSeq: 120, Unread: 5, Messages: ms[13:]},
			{Conv: "empty\u2028"},
		},
		Summaries: []readpath.SyncSummary{{Conv: "g-2", Type: schemas.ConvType_CONV_TYPE_GROUP, Large: true, Epoch: 2, MaxSeq: 1 << 50, Unread: 9, Mentions: 2}},
		Omitted:   17,
	}
	sync, err := newSyncSizer(context.Background(), "phone", (&Server{}).openMessage).encode(res)
	if err != nil {
		t.Fatal(err)
	}
	page := pageJSON{ConvID: "g-chat", Epoch: 2, ConvType: "group", MaxSeq: 120, FirstSeq: 1, HasMore: true}
	for _, m := range ms {
		page.Messages = append(page.Messages, appendMessageJSON(nil, m, sliceForm))
	}
	last := uint64(3)
	list := conversationListJSON{Next: "eyJjIjoiZy0yIn0=", Conversations: []conversationJSON{
		{ConvID: "g-chat", Kind: "group", Unread: 5, LastSeq: 120, ReadSeq: 115, LastActiveMS: 1_700_000_000_100, Mentions: 1, AckedSeq: 118,
			Preview: &wire.Preview{Seq: 120, Sender: "u2", TS: 1_700_000_000_100, Text: "今天下午三点开会 <b>&</b>"}},
		{ConvID: "d-a-b", Kind: "direct", LastSeq: 7, ReadSeq: 7, AckedSeq: 7, PeerDeliveredSeq: &last, PeerReadSeq: &last},
		{ConvID: "g<1>", Kind: "group", Large: true, Left: true},
	}}
	out := map[string][]byte{"sync.json": sync}
	for name, v := range map[string]any{"page.json": page, "conversations.json": list} {
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		out[name] = b
	}
	return out
}

func TestTheClientsCopiesOfServerAnswersAreWhatTheEncoderWrites(t *testing.T) {
	for name, want := range clientAnswers(t) {
		path := filepath.Join(clientAnswersDir, name)
		if *updateClientAnswers {
			if err := os.MkdirAll(clientAnswersDir, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, want, 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		got, err := os.ReadFile(path)
		if err != nil {
			t.Fatalf("%v (run go test ./api -run %s -update-client-answers)", err, t.Name())
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s is not what the encoder writes now: run go test ./api -run %s -update-client-answers", path, t.Name())
		}
	}
}
