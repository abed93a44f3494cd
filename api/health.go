package api

import (
	"context"
	"net/http"

	"github.com/offlinebox/offlinebox/auth"
)

// healthz is liveness: the process serves requests. It asks no store: a
// store that is down makes the process unready (readyz), not dead.
func (s *Server) healthz(*http.Request, auth.Identity) (int, any, error) {
	return http.StatusOK, map[string]string{"status": "ok"}, nil
}

// readyz answers 200 when the process can serve: its Redis (and the hot
// Redis, when there is one) answers a ping and the process's own check
// (Deps.Ready: ClickHouse, Kafka, the workers' groups where they run in
// the same process) passes; 503 naming what is not ready otherwise.
func (s *Server) readyz(r *http.Request, _ auth.Identity) (int, any, error) {
	main := s.router.Main()
	ctx, cancel := contextWithCallTimeout(r, main)
	defer cancel()
	if err := main.Client().Ping(ctx).Err(); err != nil {
		s.log.Warn("readiness: redis does not answer", "err", err)
		return http.StatusServiceUnavailable, map[string]string{"status": "not ready: redis does not answer"}, nil
	}
	if hot := s.router.Hot(); hot != nil {
		if err := hot.Client().Ping(ctx).Err(); err != nil {
			s.log.Warn("readiness: hot redis does not answer", "err", err)
			return http.StatusServiceUnavailable, map[string]string{"status": "not ready: hot redis does not answer"}, nil
		}
	}
	if s.ready != nil {
		if err := s.ready(ctx); err != nil {
			s.log.Warn("readiness", "err", err)
			return http.StatusServiceUnavailable, map[string]string{"status": "not ready: " + err.Error()}, nil
		}
	}
	return http.StatusOK, map[string]string{"status": "ready"}, nil
}

// ReadyFunc is a process's own readiness check beside the API's Redis.
type ReadyFunc func(ctx context.Context) error
