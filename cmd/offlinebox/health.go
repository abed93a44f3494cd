package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/offlinebox/offlinebox/stream"
)

// readyTimeout bounds one /readyz answer's checks.
const readyTimeout = 3 * time.Second

// health is a process's readiness: named checks (its stores, its
// workers' groups), added as the process opens them. Until open says the
// stores are opened, the process is not ready: it waits for one.
type health struct {
	mu     sync.Mutex
	opened bool
	checks []namedCheck
}

type namedCheck struct {
	name  string
	check func(context.Context) error
}

func newHealth() *health { return &health{} }

// add makes check part of readiness. A nil health ignores it.
func (h *health) add(name string, check func(context.Context) error) {
	if h == nil {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.checks = append(h.checks, namedCheck{name, check})
}

// runnerSlot is where a worker's runner is put once made: until then,
// and until the runner joined its group and consumes, the process is not
// ready.
type runnerSlot struct{ r atomic.Pointer[stream.Runner] }

func (s *runnerSlot) set(r *stream.Runner) {
	if s != nil {
		s.r.Store(r)
	}
}

// slot adds the readiness of a worker to come (nil for a nil health).
func (h *health) slot(name string) *runnerSlot {
	if h == nil {
		return nil
	}
	s := &runnerSlot{}
	h.add(name, func(context.Context) error {
		if r := s.r.Load(); r != nil {
			return r.Ready()
		}
		return errors.New("not started")
	})
	return s
}

// storesOpened marks the end of the start: from here on the checks decide.
func (h *health) storesOpened() {
	if h == nil {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.opened = true
}

// ready runs every check; the error names each that failed.
func (h *health) ready(ctx context.Context) error {
	if h == nil {
		return nil
	}
	h.mu.Lock()
	opened, checks := h.opened, append([]namedCheck(nil), h.checks...)
	h.mu.Unlock()
	if !opened {
		return errors.New("starting: waiting for the stores")
	}
	ctx, cancel := context.WithTimeout(ctx, readyTimeout)
	defer cancel()
	var errs []error
	for _, c := range checks {
		if err := c.check(ctx); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", c.name, err))
		}
	}
	return errors.Join(errs...)
}

// handler serves /metrics (reg), /healthz (the process lives) and
// /readyz (h.ready).
func (h *health) handler(reg *prometheus.Registry) http.Handler {
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		writeStatus(w, http.StatusOK, "ok")
	})
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, r *http.Request) {
		if err := h.ready(r.Context()); err != nil {
			writeStatus(w, http.StatusServiceUnavailable, "not ready: "+err.Error())
			return
		}
		writeStatus(w, http.StatusOK, "ready")
	})
	return mux
}

func writeStatus(w http.ResponseWriter, code int, status string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(map[string]string{"status": status})
}

// serveProcess serves metrics and health on addr (when set) until ctx
// ends; a process starts it before it opens a store, so that a worker
// waiting for one is seen waiting.
func serveProcess(ctx context.Context, addr string, reg *prometheus.Registry, h *health) {
	if addr == "" {
		return
	}
	go func() {
		if err := serveHTTP(ctx, addr, h.handler(reg)); err != nil {
			slog.Warn("metrics and health server stopped", "addr", addr, "err", err)
		}
	}()
}

// addStoreChecks makes p's stores part of h's readiness.
func (p *processes) addStoreChecks(h *health) {
	if p.rdb != nil {
		h.add("redis", func(ctx context.Context) error { return p.rdb.Ping(ctx).Err() })
	}
	if p.hot != nil {
		h.add("hot redis", func(ctx context.Context) error { return p.hot.Client().Ping(ctx).Err() })
	}
	if p.ch != nil {
		h.add("clickhouse", func(ctx context.Context) error { return p.ch.Ping(ctx) })
	}
	if p.producer != nil {
		h.add("kafka", func(ctx context.Context) error { return p.producer.Ping(ctx) })
	}
}
