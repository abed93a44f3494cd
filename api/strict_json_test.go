package api

import (
	"fmt"
	"net/http"
	"reflect"
	"strings"
	"testing"
)

func TestDecodeJSONRefusesWhatEncodingJSONWouldRewriteOrGuess(t *testing.T) {
	cases := []struct {
		name  string
		body  string
		into  any
		field string // "" : accepted
	}{
		{"valid", `{"client_msg_id":"m1","conv_id":"g","conv_type":"group"}`, &sendRequest{}, ""},
		{"valid escapes and a surrogate pair", `{"client_msg_id":"\u00e9\ud83d\ude00\n\"","conv_id":"g"}`, &sendRequest{}, ""},
		{"raw invalid byte", "{\"client_msg_id\":\"dup-\xff\"}", &sendRequest{}, "client_msg_id"},
		{"another raw invalid byte", "{\"client_msg_id\":\"dup-\xfe\"}", &sendRequest{}, "client_msg_id"},
		{"UTF-8 encoded surrogate", "{\"client_msg_id\":\"dup-\xed\xa0\x80\"}", &sendRequest{}, "client_msg_id"},
		{"lone high surrogate escape", `{"client_msg_id":"dup-\ud800"}`, &sendRequest{}, "client_msg_id"},
		{"lone low surrogate escape", `{"client_msg_id":"dup-\udc00x"}`, &sendRequest{}, "client_msg_id"},
		{"high surrogate before a non-surrogate escape", `{"client_msg_id":"\ud800\u0041"}`, &sendRequest{}, "client_msg_id"},
		{"invalid UTF-8 in an array item", "{\"mentions\":[\"ok\",\"b\xff\"]}", &sendRequest{}, "mentions[1]"},
		{"invalid UTF-8 in a map key", "{\"cursors\":{\"g\xff\":{}}}", &syncRequest{}, "cursors"},
		{"invalid UTF-8 in a field's name", "{\"dev\xffice_id\":\"p\"}", &syncRequest{}, "body"},
		{"invalid UTF-8 in a nested raw value", "{\"acks\":[{\"conv_id\":\"g\xff\"}]}", &ackRequest{}, "acks[0].conv_id"},
		{"duplicate key", `{"device_id":"a","device_id":"b"}`, &syncRequest{}, "device_id"},
		{"duplicate key spelled with an escape", `{"device_id":"a","\u0064evice_id":"b"}`, &syncRequest{}, "device_id"},
		{"duplicate cursor", `{"cursors":{"g":{},"g":{"seq":1}}}`, &syncRequest{}, "cursors.g"},
		{"field name in upper case", `{"DEVICE_ID":"p"}`, &syncRequest{}, "DEVICE_ID"},
		{"field name in mixed case", `{"Client_Msg_Id":"m1"}`, &sendRequest{}, "Client_Msg_Id"},
		{"unknown field", `{"devices":"p"}`, &syncRequest{}, "devices"},
		{"too deep", `{"cursors":{"g":` + strings.Repeat("[", 40) + strings.Repeat("]", 40) + `}}`, &syncRequest{}, "cursors.g" + strings.Repeat("[0]", maxJSONDepth-2)},
		{"malformed number", `{"limit":01}`, &syncRequest{}, "body"},
		{"control character in a string", "{\"device_id\":\"a\tb\"}", &syncRequest{}, "body"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := decodeJSON([]byte(tc.body), tc.into, "")
			switch {
			case tc.field == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tc.field == "":
			case err == nil:
				t.Fatalf("accepted; want 400 naming %q", tc.field)
			case err.Status != http.StatusBadRequest || err.Field != tc.field:
				t.Fatalf("%d naming %q (%s); want 400 naming %q", err.Status, err.Field, err.Msg, tc.field)
			}
		})
	}
}

func TestDecodeJSONNamesNestedFieldsUnderThePrefix(t *testing.T) {
	var c cursorJSON
	err := decodeJSON([]byte(`{"SEQ":1}`), &c, "cursors.g")
	if err == nil || err.Field != "cursors.g.SEQ" {
		t.Fatalf("got %v, want an error naming cursors.g.SEQ", err)
	}
}

// BenchmarkCheckJSON walks the request bodies the API reads most (a sync
// with many cursors, a send, an ack batch) with the strict reader alone,
// so that a change to it shows its cost apart from encoding/json's.
func BenchmarkCheckJSON(b *testing.B) {
	var sync strings.Builder
	sync.WriteString(`{"device_id":"phone-1","limit":200,"cursors":{`)
	for i := range 200 {
		if i > 0 {
			sync.WriteByte(',')
		}
		fmt.Fprintf(&sync, `"group-%04d":{"seq":%d,"epoch":1}`, i, 1000+i)
	}
	sync.WriteString(`}}`)
	var acks strings.Builder
	acks.WriteString(`{"device_id":"phone-1","acks":[`)
	for i := range 50 {
		if i > 0 {
			acks.WriteByte(',')
		}
		fmt.Fprintf(&acks, `{"conv_id":"dm-%03d","seq":%d,"epoch":2}`, i, 70+i)
	}
	acks.WriteString(`]}`)
	bodies := []struct {
		name string
		body string
		into any
	}{
		{"sync", sync.String(), &syncRequest{}},
		{"send", `{"client_msg_id":"m-0001","conv_id":"group-7","conv_type":"group","mentions":["bob","\u00e9ve"],"text":"h\u00e9llo, w\u00f6rld \ud83d\ude00 and a longer line of plain text"}`, &sendRequest{}},
		{"ack", acks.String(), &ackRequest{}},
	}
	for _, bb := range bodies {
		data := []byte(bb.body)
		t := reflect.TypeOf(bb.into)
		b.Run(bb.name, func(b *testing.B) {
			b.SetBytes(int64(len(data)))
			b.ReportAllocs()
			for b.Loop() {
				if err := checkJSON(data, t, ""); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
