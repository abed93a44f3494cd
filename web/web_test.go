package web

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestHandlerServesThePageItsAssetsAndHandsTheRestToTheAPI(t *testing.T) {
	api := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusTeapot)
		_, _ = io.WriteString(w, "api "+r.URL.Path)
	})
	srv := httptest.NewServer(Handler(api))
	defer srv.Close()
	tests := []struct {
		path, want string
		status     int
		csp        bool
	}{
		{"/", `<script type="module" src="/static/boot.js">`, http.StatusOK, true},
		{"/static/app.js", "updateLoop", http.StatusOK, false},
		{"/static/store.js", "by_client_msg_id", http.StatusOK, false},
		{"/static/offlinebox.js", "/v1/live", http.StatusOK, false},
		{"/static/boot.js", "offlinebox.js", http.StatusOK, false},
		{"/v1/conversations", "api /v1/conversations", http.StatusTeapot, false},
		{"/healthz", "api /healthz", http.StatusTeapot, false},
		{"/index.html", "api /index.html", http.StatusTeapot, false},
	}
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			resp, err := http.Get(srv.URL + tt.path)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			body, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != tt.status || !strings.Contains(string(body), tt.want) {
				t.Fatalf("GET %s: %d %.80q, want %d with %q", tt.path, resp.StatusCode, body, tt.status, tt.want)
			}
			if csp := resp.Header.Get("Content-Security-Policy"); tt.csp && !strings.Contains(csp, "default-src 'self'") {
				t.Errorf("GET %s: Content-Security-Policy %q, want default-src 'self' (nothing loaded from elsewhere)", tt.path, csp)
			}
		})
	}
}

// Every response of the page and its assets keeps the page from
// connecting anywhere but its origin, from being framed or sniffed, and
// its address out of other sites' Referer.
func TestEveryPageResponseForbidsFramingSniffingAndOtherHosts(t *testing.T) {
	srv := httptest.NewServer(Handler(http.NotFoundHandler()))
	defer srv.Close()
	for _, path := range []string{"/", "/static/app.js", "/static/style.css", "/static/missing.js"} {
		resp, err := http.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		_ = resp.Body.Close()
		h := resp.Header
		csp := map[string]string{}
		for _, d := range strings.Split(h.Get("Content-Security-Policy"), ";") {
			name, value, _ := strings.Cut(strings.TrimSpace(d), " ")
			csp[name] = value
		}
		if csp["connect-src"] != "'self'" || csp["frame-ancestors"] != "'none'" || csp["default-src"] != "'self'" {
			t.Errorf("GET %s: Content-Security-Policy %q, want connect-src 'self' alone and frame-ancestors 'none'",
				path, h.Get("Content-Security-Policy"))
		}
		for name, want := range map[string]string{"X-Frame-Options": "DENY", "X-Content-Type-Options": "nosniff",
			"Referrer-Policy": "no-referrer"} {
			if got := h.Get(name); got != want {
				t.Errorf("GET %s: %s %q, want %q", path, name, got, want)
			}
		}
	}
}

// The page runs the module clients/js ships, byte for byte, as a
// JavaScript module (a browser refuses a module of another type), with
// the page's headers.
func TestPageServesTheClientModuleClientsJSShipsAsJavaScript(t *testing.T) {
	src, err := os.ReadFile(filepath.Join("..", "clients", "js", "index.js"))
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(Handler(http.NotFoundHandler()))
	defer srv.Close()
	resp, err := http.Get(srv.URL + "/static/offlinebox.js")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	served, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK || !bytes.Equal(src, served) {
		t.Fatalf("status %d, %d bytes served of clients/js/index.js's %d", resp.StatusCode, len(served), len(src))
	}
	for h, want := range map[string]string{"Content-Type": "text/javascript; charset=utf-8",
		"Cache-Control": "no-cache", "X-Content-Type-Options": "nosniff"} {
		if got := resp.Header.Get(h); got != want {
			t.Errorf("%s: %q, want %q", h, got, want)
		}
	}
}
