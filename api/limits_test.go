package api

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/offlinebox/offlinebox/schemas"
)

// ids are n distinct user ids of the given length.
func ids(n, length int) []string {
	out := make([]string, n)
	for i := range out {
		s := fmt.Sprintf("u%d-", i)
		out[i] = s + strings.Repeat("x", length-len(s))
	}
	return out
}

// expectError requires an error answer of status naming field.
func expectError(t *testing.T, code int, data []byte, status int, field string) {
	t.Helper()
	var er tError
	if err := json.Unmarshal(data, &er); err != nil {
		t.Fatalf("answer is not JSON: %.200s", data)
	}
	if code != status || er.Error.Field != field || er.Error.Message == "" {
		t.Fatalf("status %d field %q (%s), want %d naming %q", code, er.Error.Field, er.Error.Message, status, field)
	}
}

func TestMessagesOverALimitGet400NamingTheFieldAndAreNeverProduced(t *testing.T) {
	e := newEnv(t, envOptions{})
	ann := e.token("ann", "")
	body := base64.StdEncoding.EncodeToString(make([]byte, 48<<10))
	cases := []struct {
		name  string
		req   map[string]any
		field string
	}{
		{"about 1 MB of mentions", map[string]any{"client_msg_id": "m", "conv_id": "g", "conv_type": "group",
			"mentions": ids(9800, 100)}, "mentions"},
		{"a join of more users than a record may name", map[string]any{"client_msg_id": "j", "conv_id": "g", "conv_type": "group",
			"kind": "member_join", "recipients": ids(schemas.DefaultMaxRecipients+1, 10)}, "recipients"},
		{"every field within its limit but the record over its own", map[string]any{"client_msg_id": "r", "conv_id": "g",
			"conv_type": "group", "kind": "member_join", "recipients": ids(schemas.DefaultMaxRecipients, schemas.MaxIDBytes),
			"mentions": ids(schemas.DefaultMaxMentions, schemas.MaxIDBytes), "body": body}, "recipients"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			raw := must(json.Marshal(tc.req))
			if len(raw) >= DefaultMaxBodyBytes {
				t.Fatalf("the request is %d bytes, over the body limit: it proves nothing", len(raw))
			}
			code, data := e.call("POST", "/v1/messages", ann, raw)
			expectError(t, code, data, http.StatusBadRequest, tc.field)
		})
	}
	if n := e.endOffset(t, schemas.TopicMessages); n != 0 {
		t.Fatalf("im.messages holds %d records, want none", n)
	}
}

func TestInvalidUTF8IsRefusedNeverRewritten(t *testing.T) {
	e := newEnv(t, envOptions{})
	ann := e.token("ann", "")
	// Three ids encoding/json would all turn into "dup-\ufffd": one of the
	// three messages would be stored, the others lost behind a 202.
	for i, id := range []string{"dup-\xff", "dup-\xfe", `dup-\ud800`} {
		body := fmt.Sprintf(`{"client_msg_id":"%s","conv_id":"g","conv_type":"group","body":"%s"}`,
			id, base64.StdEncoding.EncodeToString([]byte(fmt.Sprint("body ", i))))
		code, data := e.call("POST", "/v1/messages", ann, body)
		expectError(t, code, data, http.StatusBadRequest, "client_msg_id")
	}
	phone := e.token("ann", "phone")
	for _, tc := range []struct{ name, path, body, field string }{
		{"duplicate key", "/v1/messages", `{"client_msg_id":"a","client_msg_id":"b","conv_id":"g","conv_type":"group"}`, "client_msg_id"},
		{"duplicate cursor", "/v1/sync", `{"cursors":{"g":{},"g":{}}}`, "cursors.g"},
		{"upper-case field name", "/v1/sync", `{"DEVICE_ID":"phone"}`, "DEVICE_ID"},
		{"upper-case nested field name", "/v1/ack", `{"acks":[{"CONV_ID":"g","seq":1}]}`, "acks[0].CONV_ID"},
		{"invalid UTF-8 in a read receipt", "/v1/read", "{\"receipts\":[{\"conv_id\":\"g\xff\",\"seq\":1}]}", "receipts[0].conv_id"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, data := e.call("POST", tc.path, phone, tc.body)
			expectError(t, code, data, http.StatusBadRequest, tc.field)
		})
	}
	if n := e.endOffset(t, schemas.TopicMessages) + e.endOffset(t, schemas.TopicReceipts); n != 0 {
		t.Fatalf("the broker got %d records, want none", n)
	}
}

func TestSeqsBeyondAnyThatCanExistAre400(t *testing.T) {
	e := newEnv(t, envOptions{})
	smallGroup(t, e) // g holds seqs 1..4
	ann, phone := e.token("ann", ""), e.token("ann", "phone")
	epoch := e.epochOf(t, "ann", "g")
	for _, tc := range []struct{ name, method, path, body, field string }{
		{"page after the largest uint64", "GET", "/v1/conversations/g/messages?after=18446744073709551615", "", "after"},
		{"page after 2^53", "GET", "/v1/conversations/g/messages?after=9007199254740992", "", "after"},
		{"page after the conversation's max seq", "GET", "/v1/conversations/g/messages?after=5", "", "after"},
		{"page before the largest uint64", "GET", "/v1/conversations/g/messages?before=18446744073709551615", "", "before"},
		{"page of the largest epoch", "GET", "/v1/conversations/g/messages?epoch=18446744073709551615", "", "epoch"},
		{"history before the largest uint64", "GET", "/v1/conversations/g/history?before=18446744073709551615", "", "before"},
		{"sync cursor of the largest uint64", "POST", "/v1/sync", fmt.Sprintf(`{"cursors":{"g":{"seq":18446744073709551615,"epoch":%d}}}`, epoch), "cursors.g.seq"},
		{"sync cursor of the largest epoch", "POST", "/v1/sync", `{"cursors":{"g":{"seq":1,"epoch":18446744073709551615}}}`, "cursors.g.epoch"},
		{"ack of the largest epoch", "POST", "/v1/ack", `{"acks":[{"conv_id":"g","seq":1,"epoch":18446744073709551615}]}`, "acks[0].epoch"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var body any
			if tc.body != "" {
				body = tc.body
			}
			code, data := e.call(tc.method, tc.path, phone, body)
			expectError(t, code, data, http.StatusBadRequest, tc.field)
		})
	}
	var p tPage
	e.callOK(http.StatusOK, "GET", "/v1/conversations/g/messages?after=4", ann, nil, &p)
	if len(p.Messages) != 0 || p.Incomplete || p.HasMore {
		t.Fatalf("a page after the max seq: %+v, want empty and complete", p)
	}
}
