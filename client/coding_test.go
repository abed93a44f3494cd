package client

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zstd"
)

func TestMessagesOfASliceGetWhatTheSliceSaysOnceAndTextBecomesTheBody(t *testing.T) {
	answer := `{"conversations":[{"conv_id":"g","kind":"group","epoch":7,"messages":[
		{"seq":1,"client_msg_id":"a","kind":"message","sender":"u","text":"héllo"},
		{"seq":2,"client_msg_id":"b","kind":"message","sender":"u","content_type":"image/png","body":"AAEC"},
		{"seq":3,"client_msg_id":"c","kind":"message","sender":"u","content_type":"text/markdown","text":""}]}],
		"mentions":[{"conv_id":"g","message":{"conv_id":"g","seq":9,"epoch":6,"conv_type":"group","text":"@you"}}]}`
	var r SyncResponse
	if err := json.Unmarshal([]byte(answer), &r); err != nil {
		t.Fatal(err)
	}
	r.fillSlices()
	ms := r.Conversations[0].Messages
	tests := []struct {
		got  Message
		body string
		ct   string
	}{{ms[0], "héllo", "text/plain"}, {ms[1], "\x00\x01\x02", "image/png"}, {ms[2], "", "text/markdown"}}
	for _, tt := range tests {
		m := tt.got
		if m.ConvID != "g" || m.Epoch != 7 || m.ConvType != "group" || string(m.Body) != tt.body || m.ContentType != tt.ct {
			t.Errorf("message %d: %+v; want conv g, epoch 7, group, body %q, content type %q", m.Seq, m, tt.body, tt.ct)
		}
	}
	if m := r.Mentions[0].Message; m.Epoch != 6 || string(m.Body) != "@you" {
		t.Errorf("a mention keeps its own epoch and text: %+v", m)
	}
}

func TestAnswersDecodeInEachCodingAndARefusedOneSaysWhy(t *testing.T) {
	plain := bytes.Repeat([]byte(`{"seq":1,"text":"the same words again"},`), 100)
	enc, err := zstd.NewWriter(nil)
	if err != nil {
		t.Fatal(err)
	}
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	_, _ = zw.Write(plain)
	_ = zw.Close()
	tests := []struct {
		coding string
		raw    []byte
		ok     bool
	}{
		{"", plain, true},
		{"identity", plain, true},
		{"zstd", enc.EncodeAll(plain, nil), true},
		{"gzip", gz.Bytes(), true},
		{"zstd", plain, false},
		{"br", plain, false},
	}
	for _, tt := range tests {
		got, err := decodeBody(tt.coding, tt.raw)
		if tt.ok && (err != nil || !bytes.Equal(got, plain)) {
			t.Errorf("%q: %v, %d bytes; want the %d bytes sent", tt.coding, err, len(got), len(plain))
		}
		if !tt.ok && err == nil {
			t.Errorf("%q of what is not in it decoded", tt.coding)
		}
	}
}
