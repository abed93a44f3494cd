package api

import (
	"bytes"
	"context"
	"encoding/json"
	"github.com/offlinebox/offlinebox/wire"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/offlinebox/offlinebox/redisstore"
	"github.com/offlinebox/offlinebox/schemas"
)

// The fuzz targets send any input through the real server to one request
// parser each, and hold every answer to the API's contract: a 2xx, or a
// 4xx in the JSON error format, never a 5xx or a panic; and a rejected
// request changes nothing, in Redis or on the broker. Their seed corpus
// (testdata/fuzz) runs with every `go test`; `go test -fuzz FuzzSync`
// explores further.

// fuzzEnv is a server over real Redis and kfake with group g of ann and
// bob (4 records, ann's inbox delivered) and a history store, shared by
// every input of one target. No worker runs: what an accepted request
// produces stays on the broker, so Redis changes only by acks.
type fuzzEnv struct {
	*env
	adm *kadm.Client
	// tokens of ann: without a device, and pinned to device "phone".
	free, pinned string
}

func newFuzzEnv(f *testing.F) *fuzzEnv {
	e := newEnv(f, envOptions{cfg: Config{MaxCursors: 8}, history: memHistory{
		{Seq: 2, Epoch: 1, Message: textMsg("g", "m1", "bob")}, {Seq: 3, Epoch: 1, Message: textMsg("g", "m2", "bob")},
	}})
	ctx := context.Background()
	res, err := e.store.Sequence(ctx, "g", []*schemas.Message{founding("g", "bob", "ann"),
		textMsg("g", "m1", "bob"), textMsg("g", "m2", "bob"), textMsg("g", "m3", "bob")}, nil, time.Now().UnixMilli())
	if err != nil {
		f.Fatal(err)
	}
	upd := redisstore.InboxUpdate{User: "ann", Conv: "g", Form: redisstore.InboxGroup}
	for _, it := range res.Items {
		upd.Events = append(upd.Events, redisstore.InboxEvent{Kind: redisstore.InboxDelivered, Seq: it.Sequenced.Seq, WriteMS: it.Sequenced.WriteTimeMs})
	}
	if _, errs := e.store.ApplyInboxes(ctx, []redisstore.InboxUpdate{upd}); errs[0] != nil {
		f.Fatal(errs[0])
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(e.addrs...))
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(cl.Close)
	return &fuzzEnv{env: e, adm: kadm.NewClient(cl), free: e.token("ann", ""), pinned: e.token("ann", "phone")}
}

// state is everything a request could change: every key of the test's
// prefix, dumped, and the end offsets of the topics the API produces to.
func (fe *fuzzEnv) state(t *testing.T) map[string]string {
	t.Helper()
	ctx := context.Background()
	rdb := fe.store.Client()
	keys, err := rdb.Keys(ctx, fe.storeCfg.Prefix+"*").Result()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, k := range keys {
		out[k] = rdb.Dump(ctx, k).Val()
	}
	ends, err := fe.adm.ListEndOffsets(ctx, schemas.TopicMessages, schemas.TopicReceipts)
	if err != nil {
		t.Fatal(err)
	}
	ends.Each(func(o kadm.ListedOffset) {
		out[o.Topic+"/"+strconv.Itoa(int(o.Partition))] = strconv.FormatInt(o.Offset, 10)
	})
	return out
}

// do sends one request and checks the answer against the contract; it
// returns the status and body. readOnly: the route never writes, so the
// state must not change whatever the answer.
func (fe *fuzzEnv) do(t *testing.T, method, path, token string, body []byte, readOnly bool) (int, []byte) {
	t.Helper()
	before := fe.state(t)
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequest(method, fe.srv.URL+path, rd)
	if err != nil {
		t.Skipf("not a request: %v", err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	code := resp.StatusCode
	if code >= 500 || code < 200 || (code >= 300 && code < 400) {
		t.Fatalf("%s %s %q: status %d: %s", method, path, body, code, data)
	}
	if code >= 400 {
		var er tError
		if err := json.Unmarshal(data, &er); err != nil || er.Error.Code == "" || er.Error.Message == "" {
			t.Fatalf("%s %s %q: %d answer is not a JSON error: %s", method, path, body, code, data)
		}
	}
	if after := fe.state(t); (code >= 400 || readOnly) && !sameState(before, after) {
		t.Fatalf("%s %s %q answered %d and changed the state: %s", method, path, body, code, data)
	}
	return code, data
}

func sameState(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

func (fe *fuzzEnv) token(pinned bool) string {
	if pinned {
		return fe.pinned
	}
	return fe.free
}

// printableQuery skips queries that cannot stand in a request line.
func printableQuery(t *testing.T, q string) {
	for i := 0; i < len(q); i++ {
		if q[i] <= ' ' || q[i] >= 0x7f || q[i] == '#' {
			t.Skip("not a query a request line can carry")
		}
	}
}

func FuzzSyncRequest(f *testing.F) {
	fe := newFuzzEnv(f)
	f.Add([]byte(`{"device_id":"phone","cursors":{"g":{"seq":2,"epoch":1}},"limit":5,"max_bytes":8192}`), false)
	f.Fuzz(func(t *testing.T, body []byte, pinned bool) {
		code, data := fe.do(t, "POST", "/v1/sync", fe.token(pinned), body, true)
		if code == http.StatusOK {
			var r syncResponse
			if err := json.Unmarshal(data, &r); err != nil || r.DeviceID == "" {
				t.Fatalf("200 answer is not a sync answer: %s", data)
			}
		}
	})
}

func FuzzAckRequest(f *testing.F) {
	fe := newFuzzEnv(f)
	f.Add([]byte(`{"device_id":"phone","acks":[{"conv_id":"g","seq":3,"epoch":0}]}`), false)
	f.Fuzz(func(t *testing.T, body []byte, pinned bool) {
		code, data := fe.do(t, "POST", "/v1/ack", fe.token(pinned), body, false)
		if code == http.StatusOK {
			var r ackResponse
			if err := json.Unmarshal(data, &r); err != nil || r.Acked < 1 || r.DeviceID == "" {
				t.Fatalf("200 answer is not an ack answer: %s", data)
			}
		}
	})
}

func FuzzReadRequest(f *testing.F) {
	fe := newFuzzEnv(f)
	f.Add([]byte(`{"receipts":[{"conv_id":"g","seq":4}]}`), false)
	f.Fuzz(func(t *testing.T, body []byte, pinned bool) {
		code, data := fe.do(t, "POST", "/v1/read", fe.token(pinned), body, false)
		if code == http.StatusAccepted {
			var r readResponse
			if err := json.Unmarshal(data, &r); err != nil || r.Accepted < 1 {
				t.Fatalf("202 answer is not a read answer: %s", data)
			}
		}
	})
}

func FuzzSendRequest(f *testing.F) {
	fe := newFuzzEnv(f)
	f.Add([]byte(`{"client_msg_id":"c1","conv_id":"g","conv_type":"group","body":"aGk=","mentions":["bob"]}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		code, data := fe.do(t, "POST", "/v1/messages", fe.free, body, false)
		if code == http.StatusAccepted {
			var r wire.SendAnswer
			if err := json.Unmarshal(data, &r); err != nil || r.ClientMsgID == "" || r.ConvID == "" {
				t.Fatalf("202 answer is not a send answer: %s", data)
			}
		}
	})
}

func FuzzListQuery(f *testing.F) {
	fe := newFuzzEnv(f)
	f.Add("limit=2&cursor=MTcwMC5n&device_id=phone", false)
	f.Fuzz(func(t *testing.T, query string, pinned bool) {
		printableQuery(t, query)
		code, data := fe.do(t, "GET", "/v1/conversations?"+query, fe.token(pinned), nil, true)
		if code == http.StatusOK {
			var l conversationListJSON
			if err := json.Unmarshal(data, &l); err != nil {
				t.Fatalf("200 answer is not a list: %s", data)
			}
		}
	})
}

// FuzzPageQuery covers both paging routes: inside the Redis window and
// history.
func FuzzPageQuery(f *testing.F) {
	fe := newFuzzEnv(f)
	f.Add("g", "after=1&limit=2&epoch=0", false)
	f.Add("g", "before=3&limit=1", true)
	f.Fuzz(func(t *testing.T, conv, query string, history bool) {
		printableQuery(t, query)
		if conv == "" || conv == "." || conv == ".." {
			t.Skip("not a path segment")
		}
		route := "messages"
		if history {
			route = "history"
		}
		path := "/v1/conversations/" + url.PathEscape(conv) + "/" + route + "?" + query
		code, data := fe.do(t, "GET", path, fe.free, nil, true)
		if code == http.StatusOK && !strings.Contains(string(data), `"messages":[`) {
			t.Fatalf("200 answer is not a page: %s", data)
		}
	})
}
