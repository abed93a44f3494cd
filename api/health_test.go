package api

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
)

func TestReadyzAnswersWhatIsNotReadyWhileHealthzStaysAlive(t *testing.T) {
	var down atomic.Bool
	e := newEnv(t, envOptions{ready: func(context.Context) error {
		if down.Load() {
			return errors.New("clickhouse: connection refused")
		}
		return nil
	}})
	status := func(path string) (int, string) {
		resp, err := http.DefaultClient.Do(e.request("GET", path, "", nil))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	cases := []struct {
		name      string
		down      bool
		path      string
		code      int
		bodyHolds string
	}{
		{"ready", false, "/readyz", http.StatusOK, `"ready"`},
		{"a store down: not ready", true, "/readyz", http.StatusServiceUnavailable, "clickhouse: connection refused"},
		{"a store down: still alive", true, "/healthz", http.StatusOK, `"ok"`},
	}
	for _, c := range cases {
		down.Store(c.down)
		if code, body := status(c.path); code != c.code || !strings.Contains(body, c.bodyHolds) {
			t.Errorf("%s: GET %s = %d %s, want %d with %q", c.name, c.path, code, body, c.code, c.bodyHolds)
		}
	}
}
