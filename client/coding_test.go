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
	decoders := []struct {
		name   string
		decode func(*SyncResponse) error
	}{
		{"the client's own path", func(r *SyncResponse) error { return r.decodeWire([]byte(answer)) }},
		{"json.Unmarshal anywhere", func(r *SyncResponse) error { return json.Unmarshal([]byte(answer), r) }},
	}
	for _, d := range decoders {
		t.Run(d.name, func(t *testing.T) {
			var r SyncResponse
			if err := d.decode(&r); err != nil {
				t.Fatal(err)
			}
			checkSliceAnswer(t, r)
		})
	}
}

func checkSliceAnswer(t *testing.T, r SyncResponse) {
	t.Helper()
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
		got, err := decodeBody(tt.coding, tt.raw, nil)
		if tt.ok && (err != nil || !bytes.Equal(got, plain)) {
			t.Errorf("%q: %v, %d bytes; want the %d bytes sent", tt.coding, err, len(got), len(plain))
		}
		if !tt.ok && err == nil {
			t.Errorf("%q of what is not in it decoded", tt.coding)
		}
	}
}

func TestMessagesOfAPageGetWhatThePageSaysOnce(t *testing.T) {
	answer := []byte(`{"conv_id":"d","epoch":3,"conv_type":"direct","max_seq":2,"messages":[
		{"seq":1,"sender":"u","text":"hi"},{"seq":2,"sender":"v","content_type":"image/png","body":"AAEC"}]}`)
	var viaWire, viaJSON Page
	if err := viaWire.decodeWire(answer); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(answer, &viaJSON); err != nil {
		t.Fatal(err)
	}
	for _, p := range []Page{viaWire, viaJSON} {
		if len(p.Messages) != 2 || p.MaxSeq != 2 {
			t.Fatalf("page: %+v", p)
		}
		for _, m := range p.Messages {
			if m.ConvID != "d" || m.Epoch != 3 || m.ConvType != "direct" {
				t.Errorf("message %d: %+v; want conv d, epoch 3, direct", m.Seq, m)
			}
		}
		if m := p.Messages[0]; string(m.Body) != "hi" || m.ContentType != "text/plain" {
			t.Errorf("a text body: %+v", m)
		}
		if m := p.Messages[1]; string(m.Body) != "\x00\x01\x02" || m.ContentType != "image/png" {
			t.Errorf("a binary body: %+v", m)
		}
	}
}
