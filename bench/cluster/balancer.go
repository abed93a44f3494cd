package main

import (
	"fmt"
	"strings"
)

// haproxyConfig fronts the API nodes with haproxy: HTTP mode, so that a
// WebSocket upgrade passes (haproxy tunnels an upgraded connection with
// "timeout tunnel"), round robin, so that a user's devices, which connect
// one after another, land on different nodes; a node whose /healthz fails
// is taken out within a second and a half. deploy/haproxy/haproxy.cfg is
// the same file for docker-compose.yml.
func haproxyConfig(listen string, apis []string) string {
	var b strings.Builder
	b.WriteString(`global
    maxconn 8000

defaults
    mode http
    timeout connect 2s
    timeout client 60s
    timeout server 60s
    timeout tunnel 1h
    timeout http-keep-alive 10s
    option http-server-close
    retries 2
    option redispatch

frontend api
`)
	fmt.Fprintf(&b, "    bind %s\n", listen)
	b.WriteString(`    default_backend api_nodes

backend api_nodes
    balance roundrobin
    option httpchk GET /healthz
    default-server inter 500ms fall 2 rise 2
`)
	for i, a := range apis {
		fmt.Fprintf(&b, "    server api-%d %s check\n", i, a)
	}
	return b.String()
}
