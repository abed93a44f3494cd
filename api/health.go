package api

import (
	"net/http"

	"github.com/offlinebox/offlinebox/auth"
)

// healthz answers 200 when the main Redis answers a ping.
func (s *Server) healthz(r *http.Request, _ auth.Identity) (int, any, error) {
	main := s.router.Main()
	ctx, cancel := contextWithCallTimeout(r, main)
	defer cancel()
	if err := main.Client().Ping(ctx).Err(); err != nil {
		s.log.Warn("health check: redis does not answer", "err", err)
		return http.StatusServiceUnavailable, map[string]string{"status": "redis unavailable"}, nil
	}
	return http.StatusOK, map[string]string{"status": "ok"}, nil
}
