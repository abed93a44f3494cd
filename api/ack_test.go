package api

import (
	"context"
	"crypto/sha1"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/redis/go-redis/v9"
)

// sentCommands is a go-redis hook that records the names of the commands
// a client sends, alone or in a pipeline, on behalf of a request served
// by counted (the live hub's own calls, made at any time, stay out).
type sentCommands struct {
	mu     sync.Mutex
	names  []string
	script string // the script of the last name, when it was a script call
}

// countedRequest marks the context of a request whose commands are
// recorded.
type countedRequest struct{}

// counted serves h with each request's commands recorded.
func counted(t *testing.T, h http.Handler) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), countedRequest{}, true)))
	}))
	t.Cleanup(srv.Close)
	return srv
}

// record counts a script call once however it was sent: a call that met
// a server without its script (another test's SCRIPT FLUSH) is sent again
// after a load, or whole with EVAL.
func (h *sentCommands) record(ctx context.Context, cmds ...redis.Cmder) {
	if ctx.Value(countedRequest{}) == nil {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, c := range cmds {
		name := strings.ToLower(c.Name())
		script := ""
		switch name {
		case "script", "hello", "client", "auth", "select":
			continue // a script load, or a new connection's handshake
		case "evalsha":
			script = fmt.Sprint(c.Args()[1])
		case "eval":
			name, script = "evalsha", fmt.Sprintf("%x", sha1.Sum([]byte(fmt.Sprint(c.Args()[1]))))
		}
		if script != "" && script == h.script {
			continue
		}
		h.names, h.script = append(h.names, name), script
	}
}

func (h *sentCommands) take() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := h.names
	h.names, h.script = nil, ""
	return out
}

func (h *sentCommands) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h *sentCommands) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		err := next(ctx, cmd)
		h.record(ctx, cmd)
		return err
	}
}

func (h *sentCommands) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		err := next(ctx, cmds)
		h.record(ctx, cmds...)
		return err
	}
}

// A member's ack is checked by the script that raises its delivered
// receipts: two script calls (that one, then the device's cursors) and no
// read of its own per conversation; the ack's effect is what it was.
func TestAMembersAckIsCheckedInTheReceiptsScriptWithoutReadsOfItsOwn(t *testing.T) {
	e := newEnv(t, envOptions{})
	smallGroup(t, e)
	sent := &sentCommands{}
	e.store.Client().AddHook(sent)
	annPhone := e.token("ann", "phone")
	srv := counted(t, e.server.Handler())

	req, err := http.NewRequest("POST", srv.URL+"/v1/ack", strings.NewReader(`{"device_id":"phone","acks":[{"conv_id":"g","seq":3}]}`))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+annPhone)
	resp, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var out ackResponse
	err = json.NewDecoder(resp.Body).Decode(&out)
	resp.Body.Close()
	if err != nil || resp.StatusCode != http.StatusOK || out.Acked != 1 || out.Resync {
		t.Fatalf("ack answered %d %+v (%v)", resp.StatusCode, out, err)
	}
	if got := sent.take(); !slices.Equal(got, []string{"evalsha", "evalsha"}) {
		t.Fatalf("the ack sent %v, want two script calls", got)
	}
	cursors, err := e.router.DeviceCursors(context.Background(), "ann", "phone")
	if err != nil {
		t.Fatal(err)
	}
	if c := cursors["g"]; c.Seq != 3 || c.Epoch == 0 {
		t.Fatalf("the device's cursor of g is %+v, want seq 3 of the conversation's epoch", c)
	}
	var rc receiptsJSON
	e.callOK(http.StatusOK, "GET", "/v1/conversations/g/receipts?seq=3", e.token("bob", ""), nil, &rc)
	if rc.Delivered == nil || *rc.Delivered != 1 || rc.State != StateDelivered {
		t.Fatalf("receipts of seq 3 after ann's ack: %+v", rc)
	}

	// A refused ack goes through the full check, which names the item at
	// fault, and changes nothing.
	code, data := e.call("POST", "/v1/ack", annPhone, `{"device_id":"phone","acks":[{"conv_id":"g","seq":4},{"conv_id":"g","seq":99}]}`)
	if code != http.StatusBadRequest || !strings.Contains(string(data), "acks[1].seq") {
		t.Fatalf("an ack beyond the max answered %d %s", code, data)
	}
	cursors, err = e.router.DeviceCursors(context.Background(), "ann", "phone")
	if err != nil {
		t.Fatal(err)
	}
	e.callOK(http.StatusOK, "GET", "/v1/conversations/g/receipts?seq=4", e.token("bob", ""), nil, &rc)
	if c := cursors["g"]; c.Seq != 3 || rc.Delivered == nil || *rc.Delivered != 0 {
		t.Fatalf("a refused ack changed the cursor to %+v, delivered of seq 4 to %s", c, fmt.Sprint(*rc.Delivered))
	}
}
