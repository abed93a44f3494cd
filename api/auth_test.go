package api

import (
	"context"
	"encoding/json"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/offlinebox/offlinebox/auth"
	"github.com/offlinebox/offlinebox/schemas"
)

func TestEveryRouteButHealthNeedsAValidToken(t *testing.T) {
	e := newEnv(t, envOptions{})
	past, err := auth.New(auth.Config{Secret: testSecret, Now: func() time.Time { return time.Now().Add(-48 * time.Hour) }})
	if err != nil {
		t.Fatal(err)
	}
	expired, _ := past.Mint("ann", "", time.Hour)
	other, _ := must(auth.New(auth.Config{Secret: []byte("another-secret-of-enough-length!")})).Mint("ann", "", time.Hour)
	none, _ := jwt.NewWithClaims(jwt.SigningMethodNone, jwt.RegisteredClaims{Subject: "ann",
		ExpiresAt: jwt.NewNumericDate(time.Now().Add(time.Hour))}).SignedString(jwt.UnsafeAllowNoneSignatureType)
	tokens := map[string]string{"missing": "", "garbage": "abc.def.ghi", "expired": expired, "other secret": other, "alg none": none}
	for _, rt := range e.server.routes() {
		if rt.public {
			if code, _ := e.call(rt.method, rt.pattern, "", nil); code != http.StatusOK {
				t.Errorf("%s %s without a token: %d, want 200", rt.method, rt.pattern, code)
			}
			continue
		}
		path := pathOf(rt.pattern)
		for name, tok := range tokens {
			code, data := e.call(rt.method, path, tok, `{}`)
			var er tError
			if code != http.StatusUnauthorized || json.Unmarshal(data, &er) != nil || er.Error.Code != "unauthorized" {
				t.Errorf("%s %s with %s token: %d %s, want 401", rt.method, path, name, code, data)
			}
		}
	}
}

// pathOf fills a route pattern's wildcards.
func pathOf(pattern string) string {
	out := []byte{}
	skip := false
	for i := 0; i < len(pattern); i++ {
		switch c := pattern[i]; {
		case c == '{':
			skip = true
			out = append(out, 'x')
		case c == '}':
			skip = false
		case !skip:
			out = append(out, c)
		}
	}
	return string(out)
}

// blockingHistory holds every history read until released.
type blockingHistory struct {
	entered chan struct{}
	release chan struct{}
	once    sync.Once
}

func (b *blockingHistory) History(ctx context.Context, conv string, epoch, before uint64, limit int) ([]*schemas.Sequenced, bool, error) {
	b.once.Do(func() { close(b.entered) })
	select {
	case <-b.release:
	case <-ctx.Done():
		return nil, false, ctx.Err()
	}
	return nil, false, nil
}

func (b *blockingHistory) SharedSeq(context.Context, string, uint64, uint64) (uint64, error) {
	return 0, nil
}

// A request that finds every in-flight slot taken waits for one, in
// arrival order, for at most QueueWait: it is answered if a slot frees in
// time, and gets 503 with Retry-After if none does.
func TestRequestsBeyondTheInFlightBoundWaitForASlotThenGet503WithRetryAfter(t *testing.T) {
	for _, tc := range []struct {
		name      string
		queueWait time.Duration
		freeAfter time.Duration // the held slot frees after this
		want      int
	}{
		{"a slot frees within the wait", 5 * time.Second, 300 * time.Millisecond, http.StatusOK},
		{"no slot frees within the wait", 300 * time.Millisecond, 3 * time.Second, http.StatusServiceUnavailable},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := &blockingHistory{entered: make(chan struct{}), release: make(chan struct{})}
			e := newEnv(t, envOptions{cfg: Config{MaxInFlight: 1, RetryAfter: 2 * time.Second, QueueWait: tc.queueWait}, history: h})
			smallGroup(t, e)
			tok := e.token("ann", "")
			done := make(chan int)
			go func() {
				code, _ := e.call("GET", "/v1/conversations/g/history", tok, nil)
				done <- code
			}()
			<-h.entered
			freed := time.AfterFunc(tc.freeAfter, func() { close(h.release) })
			defer freed.Stop()
			req, _ := http.NewRequest("GET", e.srv.URL+"/v1/conversations", nil)
			req.Header.Set("Authorization", "Bearer "+tok)
			start := time.Now()
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			waited := time.Since(start)
			if resp.StatusCode != tc.want {
				t.Fatalf("second request: %d after %s, want %d", resp.StatusCode, waited, tc.want)
			}
			switch tc.want {
			case http.StatusOK:
				if waited < tc.freeAfter/2 {
					t.Fatalf("second request answered after %s, before the slot freed", waited)
				}
			default:
				if resp.Header.Get("Retry-After") != "2" || waited < tc.queueWait {
					t.Fatalf("second request: Retry-After %q after %s, want 2 after at least %s",
						resp.Header.Get("Retry-After"), waited, tc.queueWait)
				}
			}
			if code := <-done; code != http.StatusOK {
				t.Fatalf("held request ended with %d", code)
			}
			if code, _ := e.call("GET", "/v1/conversations", tok, nil); code != http.StatusOK {
				t.Fatalf("after the slot freed: %d", code)
			}
		})
	}
}
