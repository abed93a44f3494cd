package main

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"strings"
	"testing"
	"time"

	"github.com/offlinebox/offlinebox/bench/checker"
	"github.com/offlinebox/offlinebox/schemas"
)

// snapshot is every key of the env's prefix with its serialized value,
// and the end offsets of the topics the API writes to.
type snapshot struct {
	keys    map[string]string
	offsets map[string]int64
}

func takeSnapshot(t *testing.T, e *env) snapshot {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s := snapshot{keys: map[string]string{}, offsets: map[string]int64{}}
	iter := e.rdb.Scan(ctx, 0, e.prefix+"*", 1000).Iterator()
	for iter.Next(ctx) {
		k := iter.Val()
		if strings.HasSuffix(k, ":dv") {
			// A user's devices and their last use: a valid sync raises its
			// device's time, so only who is registered must not change.
			devs, err := e.rdb.ZRange(ctx, k, 0, -1).Result()
			if err != nil {
				t.Fatalf("read %s: %v", k, err)
			}
			s.keys[k] = strings.Join(devs, ",")
			continue
		}
		v, err := e.rdb.Dump(ctx, k).Result()
		if err != nil {
			t.Fatalf("dump %s: %v", k, err)
		}
		s.keys[k] = v
	}
	if err := iter.Err(); err != nil {
		t.Fatal(err)
	}
	for _, topic := range []string{schemas.TopicMessages, schemas.TopicReceipts} {
		ends, err := checker.EndOffsets(ctx, e.brokers, topic)
		if err != nil {
			t.Fatal(err)
		}
		for p, o := range ends {
			s.offsets[fmt.Sprintf("%s/%d", topic, p)] = o
		}
	}
	return s
}

// badRequest is one request the API must refuse with a 4xx, or (at the
// limit but valid) answer without writing anything.
type badRequest struct {
	name   string
	method string
	path   string
	body   string
	token  string // "" sends none
	status int
}

func limitRequests(user, conv, foreign string, epoch, maxSeq uint64, tok, otherDevice string) []badRequest {
	many := func(n int, f func(i int) string) string {
		parts := make([]string, n)
		for i := range parts {
			parts[i] = f(i)
		}
		return strings.Join(parts, ",")
	}
	cur := func(c string, seq string) string {
		return fmt.Sprintf(`{"cursors":{%q:{"seq":%s,"epoch":%d}}}`, c, seq, epoch)
	}
	long := strings.Repeat("x", schemas.MaxIDBytes+1)
	body := checker.BodyMarker + "limits"
	msg := func(extra string) string {
		return `{"client_msg_id":"lim-1","conv_id":"` + conv + `","conv_type":"group","body":"` + b64(body) + `"` + extra + `}`
	}
	return []badRequest{
		{"sync with an empty body", "POST", "/v1/sync", "", tok, 400},
		{"sync with a JSON array", "POST", "/v1/sync", `[]`, tok, 400},
		{"sync with trailing data", "POST", "/v1/sync", `{}{}`, tok, 400},
		{"sync with an unknown field", "POST", "/v1/sync", `{"cursor":{}}`, tok, 400},
		{"sync with a limit of 201", "POST", "/v1/sync", `{"limit":201}`, tok, 400},
		{"sync with a byte budget of 1", "POST", "/v1/sync", `{"max_bytes":1}`, tok, 400},
		{"sync with 200 cursors and limit 200 (valid, writes nothing)", "POST", "/v1/sync",
			`{"limit":200,"cursors":{` + many(200, func(i int) string { return fmt.Sprintf(`"会话-%d":{"seq":0}`, i) }) + `}}`, tok, 200},
		{"sync with 5001 cursors", "POST", "/v1/sync",
			`{"cursors":{` + many(5001, func(i int) string { return fmt.Sprintf(`"c%d":{"seq":0}`, i) }) + `}}`, tok, 400},
		{"sync with the largest seq there can be (valid: a rebase)", "POST", "/v1/sync", cur(conv, "9007199254740991"), tok, 200},
		{"sync with a seq above 2^53-1 (none can exist)", "POST", "/v1/sync", cur(conv, "18446744073709551615"), tok, 400},
		{"sync with a seq beyond 64 bits", "POST", "/v1/sync", cur(conv, "18446744073709551616"), tok, 400},
		{"sync with a negative seq", "POST", "/v1/sync", cur(conv, "-1"), tok, 400},
		{"sync with a seq but no epoch", "POST", "/v1/sync", fmt.Sprintf(`{"cursors":{%q:{"seq":3}}}`, conv), tok, 400},
		{"sync with a conversation id holding a brace", "POST", "/v1/sync", cur("a{b}", "1"), tok, 400},
		{"sync with a conversation id of 129 bytes", "POST", "/v1/sync", cur(long, "1"), tok, 400},
		{"sync naming another device than the token's", "POST", "/v1/sync", `{"device_id":"other"}`, tok, 403},
		{"sync without a token", "POST", "/v1/sync", `{}`, "", 401},
		{"sync with a forged token", "POST", "/v1/sync", `{}`, otherDevice + "x", 401},
		{"ack with an empty body", "POST", "/v1/ack", "", tok, 400},
		{"ack of nothing", "POST", "/v1/ack", `{"acks":[]}`, tok, 400},
		{"ack of seq 0", "POST", "/v1/ack", fmt.Sprintf(`{"acks":[{"conv_id":%q,"seq":0}]}`, conv), tok, 400},
		{"ack beyond the max seq", "POST", "/v1/ack", fmt.Sprintf(`{"acks":[{"conv_id":%q,"seq":%d}]}`, conv, maxSeq+1), tok, 400},
		{"ack of the largest seq", "POST", "/v1/ack", fmt.Sprintf(`{"acks":[{"conv_id":%q,"seq":18446744073709551615}]}`, conv), tok, 400},
		{"ack of an older epoch", "POST", "/v1/ack", fmt.Sprintf(`{"acks":[{"conv_id":%q,"seq":1,"epoch":%d}]}`, conv, epoch-1), tok, 409},
		{"ack of an epoch never issued", "POST", "/v1/ack", fmt.Sprintf(`{"acks":[{"conv_id":%q,"seq":1,"epoch":%d}]}`, conv, epoch+1), tok, 400},
		{"ack of a conversation of others", "POST", "/v1/ack", `{"acks":[{"conv_id":"no-such-conv","seq":1}]}`, tok, 403},
		{"ack of 5001 items", "POST", "/v1/ack", `{"acks":[` + many(5001, func(int) string { return fmt.Sprintf(`{"conv_id":%q,"seq":1}`, conv) }) + `]}`, tok, 400},
		{"read of nothing", "POST", "/v1/read", `{"receipts":[]}`, tok, 400},
		{"read beyond the max seq", "POST", "/v1/read", fmt.Sprintf(`{"receipts":[{"conv_id":%q,"seq":%d}]}`, conv, maxSeq+1), tok, 400},
		{"send with an empty body", "POST", "/v1/messages", "", tok, 400},
		{"send without a conversation type", "POST", "/v1/messages", `{"client_msg_id":"x","conv_id":"` + conv + `"}`, tok, 400},
		{"send with an unknown kind", "POST", "/v1/messages", msg(`,"kind":"shout"`), tok, 400},
		{"send with a client_msg_id holding a colon", "POST", "/v1/messages", strings.Replace(msg(""), "lim-1", "lim:1", 1), tok, 400},
		{"send with a body over the limit", "POST", "/v1/messages", msg("") + strings.Repeat(" ", 1<<20), tok, 400},
		{"send a direct message to two", "POST", "/v1/messages",
			`{"client_msg_id":"lim-2","conv_id":"dm-new","conv_type":"direct","recipients":["a","b"],"body":"` + b64(body) + `"}`, tok, 400},
		{"send a direct message to oneself", "POST", "/v1/messages",
			`{"client_msg_id":"lim-3","conv_id":"dm-new","conv_type":"direct","recipients":["` + user + `"],"body":"` + b64(body) + `"}`, tok, 400},
		{"send into a conversation of others", "POST", "/v1/messages",
			`{"client_msg_id":"lim-4","conv_id":"` + foreign + `","conv_type":"direct","recipients":["nobody-else"],"body":"` + b64(body) + `"}`, tok, 403},
		{"list with limit 0", "GET", "/v1/conversations?limit=0", "", tok, 400},
		{"list with limit 201", "GET", "/v1/conversations?limit=201", "", tok, 400},
		{"list with an unknown parameter", "GET", "/v1/conversations?lmit=5", "", tok, 400},
		{"page after a seq beyond 64 bits", "GET", "/v1/conversations/" + conv + "/messages?after=18446744073709551616", "", tok, 400},
		{"page after a negative seq", "GET", "/v1/conversations/" + conv + "/messages?after=-1", "", tok, 400},
		{"page of 1000", "GET", "/v1/conversations/" + conv + "/messages?after=0&limit=1000", "", tok, 400},
		{"page of a conversation of others", "GET", "/v1/conversations/no-such-conv/messages?after=0", "", tok, 403},
		{"history page with a bad id", "GET", "/v1/conversations/a%7Bb/history", "", tok, 400},
	}
}

func b64(s string) string {
	data, _ := json.Marshal([]byte(s))
	return strings.Trim(string(data), `"`)
}

// TestRequestsAtTheLimitsGetAClear4xxAndChangeNothing plays a small
// workload, then sends malformed, oversized and out-of-range requests of
// every route: each is refused with a 4xx that names the problem (or, at
// the limit but valid, answered), and neither Redis nor the topics the API
// writes to change.
func TestRequestsAtTheLimitsGetAClear4xxAndChangeNothing(t *testing.T) {
	e := startTestEnv(t, nil)
	w := playSmall(t, e, 11)
	var user, tok, conv string
	var epoch, maxSeq uint64
	for _, d := range w.Devices {
		tok, _ = e.token(d.User, d.ID)
		// A device of its own sees the user's conversations from the start.
		probe, _ := e.token(d.User, "probe")
		if conv, epoch, maxSeq = memberConv(t, e, probe); conv != "" {
			user = d.User
			break
		}
	}
	if user == "" {
		t.Fatal("no user of the workload is in a group")
	}
	foreign := foreignDirect(t, e, w, tok)
	other, _ := e.token(user, "another-device")
	before := takeSnapshot(t, e)
	for _, rq := range limitRequests(user, conv, foreign, epoch, maxSeq, tok, other) {
		status, _, body := do(t, rq.method, e.apiURL+rq.path, rq.token, bodyOf(rq))
		if status != rq.status {
			t.Errorf("%s: status %d, want %d (%s)", rq.name, status, rq.status, clip(body))
			continue
		}
		if status >= 400 {
			var eb struct {
				Error struct{ Code, Message string }
			}
			if err := json.Unmarshal(body, &eb); err != nil || eb.Error.Code == "" || eb.Error.Message == "" {
				t.Errorf("%s: the %d does not say what is wrong: %s", rq.name, status, clip(body))
			}
		}
	}
	after := takeSnapshot(t, e)
	if !maps.Equal(before.offsets, after.offsets) {
		t.Errorf("topics changed: %v -> %v", before.offsets, after.offsets)
	}
	for k, v := range after.keys {
		if before.keys[k] != v {
			t.Errorf("key %s changed", k)
		}
	}
	for k := range before.keys {
		if _, ok := after.keys[k]; !ok {
			t.Errorf("key %s was deleted", k)
		}
	}
}

func bodyOf(rq badRequest) []byte {
	if rq.method == "GET" {
		return nil
	}
	return []byte(rq.body)
}

// memberConv is a group the token's user belongs to, with its epoch and
// max seq, from the conversation list and one sync.
func memberConv(t *testing.T, e *env, tok string) (string, uint64, uint64) {
	t.Helper()
	_, _, body := do(t, "POST", e.apiURL+"/v1/sync", tok, []byte(`{"limit":1}`))
	var resp struct {
		Conversations []struct {
			ConvID string `json:"conv_id"`
			Kind   string `json:"kind"`
			Epoch  uint64 `json:"epoch"`
			MaxSeq uint64 `json:"max_seq"`
		} `json:"conversations"`
		Summaries []struct {
			ConvID string `json:"conv_id"`
			Kind   string `json:"kind"`
			Epoch  uint64 `json:"epoch"`
			MaxSeq uint64 `json:"max_seq"`
		} `json:"summaries"`
	}
	if err := json.Unmarshal(body, &resp); err != nil {
		t.Fatalf("sync: %v: %s", err, clip(body))
	}
	for _, c := range append(resp.Conversations, resp.Summaries...) {
		if c.Kind == "group" && c.MaxSeq > 1 && !strings.HasPrefix(c.ConvID, "large") {
			return c.ConvID, c.Epoch, c.MaxSeq
		}
	}
	return "", 0, 0
}

// foreignDirect is a direct conversation of the workload the token's user
// is not in.
func foreignDirect(t *testing.T, e *env, w *checker.Workload, tok string) string {
	t.Helper()
	_, _, body := do(t, "GET", e.apiURL+"/v1/conversations?limit=200", tok, nil)
	if !strings.Contains(string(body), `"conversations"`) {
		t.Fatalf("conversation list: %s", clip(body))
	}
	for _, c := range w.Convs {
		if strings.HasPrefix(c, "dm-") && !strings.Contains(string(body), `"`+c+`"`) {
			return c
		}
	}
	t.Fatal("the user is in every direct conversation")
	return ""
}

func clip(b []byte) string {
	if len(b) > 300 {
		return string(b[:300]) + "..."
	}
	return string(b)
}
