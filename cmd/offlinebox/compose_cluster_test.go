package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// TestComposeRunsTheClusterShape: docker-compose.yml has the shape
// bench/cluster runs: three API nodes behind haproxy (which passes
// WebSocket upgrades), every worker but expiry twice over, and a Redis
// Cluster of six nodes that every process is told is a cluster.
func TestComposeRunsTheClusterShape(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("..", "..", "docker-compose.yml"))
	if err != nil {
		t.Fatal(err)
	}
	type service struct {
		Image       string
		Deploy      struct{ Replicas int }
		Environment map[string]string
		Volumes     []string
	}
	var compose struct{ Services map[string]service }
	if err := yaml.Unmarshal(raw, &compose); err != nil {
		t.Fatal(err)
	}
	replicas := []struct {
		service string
		want    int
	}{{"api", 3}, {"fanout", 2}, {"push", 2}, {"convindex", 2}, {"history", 2}}
	for _, r := range replicas {
		if got := compose.Services[r.service].Deploy.Replicas; got != r.want {
			t.Errorf("%s: %d replicas, want %d", r.service, got, r.want)
		}
	}
	for i := 1; i <= 6; i++ {
		name := "redis-" + string(rune('0'+i))
		if _, ok := compose.Services[name]; !ok {
			t.Errorf("no Redis Cluster node %s", name)
		}
	}
	for _, name := range []string{"api", "fanout", "push", "convindex", "history", "expiry"} {
		env := compose.Services[name].Environment
		if env["OFFLINEBOX_REDIS_CLUSTER"] != "1" || len(strings.Split(env["OFFLINEBOX_REDIS"], ",")) != 6 {
			t.Errorf("%s: OFFLINEBOX_REDIS %q, OFFLINEBOX_REDIS_CLUSTER %q: want the six cluster nodes and 1", name, env["OFFLINEBOX_REDIS"], env["OFFLINEBOX_REDIS_CLUSTER"])
		}
	}
	lb, ok := compose.Services["balancer"]
	if !ok || !strings.HasPrefix(lb.Image, "haproxy:") || len(lb.Volumes) == 0 || !strings.HasPrefix(lb.Volumes[0], "./deploy/haproxy/haproxy.cfg:") {
		t.Fatalf("balancer: %+v, want haproxy with deploy/haproxy/haproxy.cfg", lb)
	}
	cfg, err := os.ReadFile(filepath.Join("..", "..", "deploy", "haproxy", "haproxy.cfg"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"mode http", "timeout tunnel", "option httpchk GET /healthz", "server-template api- 3 api:8080"} {
		if !strings.Contains(string(cfg), want) {
			t.Errorf("haproxy.cfg lacks %q", want)
		}
	}
}
