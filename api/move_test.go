package api

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"

	"github.com/offlinebox/offlinebox/redisstore"
)

// While a user's keys are being moved to the hot store the main copy is
// marked and refuses every read and write of them, and the router does not
// list the user yet: a request in that window is answered 503 with
// Retry-After (nothing was written), and the same request succeeds once
// the move is done.
func TestRequestsDuringAMoveToTheHotStoreGet503AndLandAfterIt(t *testing.T) {
	e := newEnv(t, envOptions{hot: true})
	smallGroup(t, e)
	ctx := context.Background()
	k := e.store.Keys()
	// The first step of a move, taken by another process.
	if err := e.store.Client().HSet(ctx, k.Profile("ann"), "loc", "hot").Err(); err != nil {
		t.Fatal(err)
	}
	ann := e.token("ann", "phone")
	ack := map[string]any{"acks": []map[string]any{{"conv_id": "g", "seq": 3}}}
	cases := []struct {
		name, method, path string
		body               any
		after              int
	}{
		{"ack", "POST", "/v1/ack", ack, http.StatusOK},
		{"sync", "POST", "/v1/sync", map[string]any{}, http.StatusOK},
		{"list", "GET", "/v1/conversations", nil, http.StatusOK},
	}
	for _, tc := range cases {
		code, data, retry := e.callWithHeader(tc.method, tc.path, ann, tc.body, "Retry-After")
		var er tError
		if code != http.StatusServiceUnavailable || json.Unmarshal(data, &er) != nil || er.Error.Code != "unavailable" || retry == "" {
			t.Fatalf("%s during the move: %d %s (Retry-After %q), want 503 unavailable with Retry-After", tc.name, code, data, retry)
		}
	}
	if n := e.store.Client().Exists(ctx, k.Devices("ann"), k.Cursor("ann", "phone")).Val(); n != 0 {
		t.Fatalf("a refused ack left %d device keys on the main copy", n)
	}
	if err := redisstore.NewInboxRouter(e.store, e.hot, 0).MoveToHot(ctx, "ann"); err != nil {
		t.Fatal(err)
	}
	for _, tc := range cases {
		e.callOK(tc.after, tc.method, tc.path, ann, tc.body, nil)
	}
	if c := e.hot.Client().HGet(ctx, e.hot.Keys().Cursor("ann", "phone"), "g").Val(); c != "3" {
		t.Fatalf("cursor on the hot store %q after the retried ack, want 3", c)
	}
}

// callWithHeader is call that also returns one response header.
func (e *env) callWithHeader(method, path, token string, body any, header string) (int, []byte, string) {
	e.t.Helper()
	req := e.request(method, path, token, body)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	var out json.RawMessage
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		e.t.Fatalf("%s %s: answer is not JSON: %v", method, path, err)
	}
	return resp.StatusCode, out, resp.Header.Get(header)
}
