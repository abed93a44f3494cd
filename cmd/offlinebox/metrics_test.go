package main

import (
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/offlinebox/offlinebox/auth"
)

func get(t *testing.T, url, token string) (int, string) {
	t.Helper()
	req, err := http.NewRequest("GET", url, nil)
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

// The API's port serves no metrics, with a token or without: they are on
// the process's own metrics listener (loopback by default).
func TestMetricsAreOnTheirOwnListenerNotOnTheAPIPort(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	metricsAddr := ln.Addr().String()
	ln.Close()
	base, _ := startPipelineWith(t, func(c *stackConfig) { c.MetricsListen = metricsAddr })
	kr, err := auth.New(auth.Config{Secret: []byte(testSecret)})
	if err != nil {
		t.Fatal(err)
	}
	tok, err := kr.Mint("ann", "", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	for _, token := range []string{"", tok} {
		if code, body := get(t, base+"/metrics", token); code != http.StatusNotFound || strings.Contains(body, "offlinebox_") {
			t.Fatalf("GET /metrics on the API port (token %v): %d %.200s, want 404 and no metrics", token != "", code, body)
		}
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		code, body := get(t, "http://"+metricsAddr+"/metrics", "")
		if code == http.StatusOK && strings.Contains(body, "offlinebox_api_requests_total") {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("GET /metrics on the metrics listener: %d %.200s", code, body)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
