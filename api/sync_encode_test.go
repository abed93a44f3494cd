package api

import (
	"bytes"
	"context"
	"encoding/json"
	"testing"

	"github.com/offlinebox/offlinebox/redisstore/readpath"
	"github.com/offlinebox/offlinebox/schemas"
)

// awkwardStrings are the inputs where a hand-written JSON encoder is most
// likely to part from encoding/json.
var awkwardStrings = []string{
	"", "plain", `quo"te\back`, "<script>&amp;</script>", "tab\tnew\nline\rcr\bbs\fff",
	"\x00\x01\x1f\x7f", "héllo wörld ✓ 𝄞", "line\u2028para\u2029end", "bad\xffutf8\xc3", "\xe2\x80",
}

func awkwardMessages() []*schemas.Sequenced {
	var out []*schemas.Sequenced
	for i, s := range awkwardStrings {
		m := &schemas.Message{ClientMsgId: s, ConvId: "g-" + s, ConvType: schemas.ConvType(i % 3), Sender: s,
			Kind: schemas.Kind(i % 4), ContentType: s, Body: []byte(s), SendTimeMs: int64(i) * -1e12}
		if i%2 == 0 {
			m.Recipients, m.Mentions, m.MentionAll = []string{s, "u1"}, []string{s}, true
		}
		if i == 3 {
			m.Body = nil
		}
		switch i % 3 {
		case 1:
			m.ContentType = "Text/plain" // a text body travels as a string, unless it is not UTF-8
		case 2:
			m.ContentType = "text/plain" // said by the text field alone, unless it is not UTF-8
		}
		out = append(out, &schemas.Sequenced{Message: m, Seq: uint64(i) << 40, Epoch: uint64(i + 1), WriteTimeMs: int64(i) * 1e12})
	}
	out = append(out, &schemas.Sequenced{}, &schemas.Sequenced{Message: &schemas.Message{Body: []byte{}}, Seq: ^uint64(0)},
		&schemas.Sequenced{Message: &schemas.Message{Body: []byte{}, ContentType: "text/markdown"}, Seq: 3})
	return out
}

func TestAppendMessageJSONWritesWhatJSONMarshalWrites(t *testing.T) {
	for _, form := range []messageForm{fullForm, sliceForm} {
		for i, m := range awkwardMessages() {
			want, err := json.Marshal(toMessageJSON(m, form))
			if err != nil {
				t.Fatal(err)
			}
			if got := appendMessageJSON(nil, m, form); !bytes.Equal(got, want) {
				t.Errorf("message %d, form %d:\n got %s\nwant %s", i, form, got, want)
			}
		}
	}
}

// marshalSyncAnswer is how the answer was built before encode spliced the
// message encodings in: json.Marshal over the parts.
func marshalSyncAnswer(t *testing.T, device string, res *readpath.SyncResult) []byte {
	t.Helper()
	out := syncResponse{DeviceID: device, Resync: res.Resync, Omitted: res.Omitted, MentionsMore: res.MentionsMore,
		Mentions: []json.RawMessage{}, Conversations: []json.RawMessage{}, Summaries: []json.RawMessage{}}
	if res.MentionsNext != nil {
		out.MentionsNext = res.MentionsNext.String()
	}
	must := func(v any) json.RawMessage {
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	for _, m := range res.Mentions {
		out.Mentions = append(out.Mentions, must(mentionJSON{ConvID: m.Conv, All: m.All, Message: must(toMessageJSON(m.Message, fullForm))}))
	}
	for i := range res.Convs {
		c := &res.Convs[i]
		msgs := make([]json.RawMessage, len(c.Messages))
		for j, m := range c.Messages {
			msgs[j] = must(toMessageJSON(m, sliceForm))
		}
		out.Conversations = append(out.Conversations, must(convJSON(c, msgs)))
	}
	for _, sm := range res.Summaries {
		out.Summaries = append(out.Summaries, must(summaryOf(sm)))
	}
	return must(out)
}

func TestSyncEncodeWritesWhatJSONMarshalOfThePartsWrote(t *testing.T) {
	ms := awkwardMessages()
	full := &readpath.SyncResult{
		Resync:       true,
		Mentions:     []readpath.SyncMention{{Conv: "g<1>", All: true, Message: ms[2]}, {Conv: "d-a-b", Message: ms[5]}},
		MentionsMore: true,
		MentionsNext: &readpath.MentionMark{TS: 1 << 42, Conv: "d-\"a\"\u2028", Seq: 1 << 60},
		Convs: []readpath.SyncConv{
			{Conv: "g<1>", Type: schemas.ConvType_CONV_TYPE_GROUP, Large: true, Epoch: 3, MaxSeq: 99, Unread: 12, Messages: ms[:4], Older: 2,
				HasMore: true, Gap: &readpath.SeqRange{From: 5, To: ^uint64(0)}},
			{Conv: "d-a-b", Type: schemas.ConvType_CONV_TYPE_DIRECT, Epoch: 1, MaxSeq: 7, Messages: ms[4:], Rebase: true,
				RebaseReason: readpath.RebaseResync, Incomplete: true},
			{Conv: "empty\u2028"},
		},
		Summaries: []readpath.SyncSummary{{Conv: "g-2", Type: schemas.ConvType_CONV_TYPE_GROUP, Large: true, Epoch: 2, MaxSeq: 1 << 50, Unread: 9, Mentions: 2}},
		Omitted:   17,
	}
	tests := []struct {
		name   string
		device string
		res    *readpath.SyncResult
	}{
		{"an empty answer", "phone", &readpath.SyncResult{}},
		{"every kind of part with awkward strings", `dev"<&>`, full},
		{"conversations only", "tablet", &readpath.SyncResult{Convs: full.Convs[:1]}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			want := marshalSyncAnswer(t, tc.device, tc.res)
			z := newSyncSizer(context.Background(), tc.device, (&Server{}).openMessage)
			for _, m := range ms[:3] {
				z.Message(m) // as the budget would, so that some encodings are reused
			}
			got, err := z.encode(tc.res)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("answer differs:\n got %s\nwant %s", got, want)
			}
			if !json.Valid(got) {
				t.Errorf("answer is not valid JSON: %s", got)
			}
		})
	}
}
