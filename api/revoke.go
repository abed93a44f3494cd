package api

import (
	"net/http"
	"time"

	"github.com/offlinebox/offlinebox/auth"
	"github.com/offlinebox/offlinebox/schemas"
)

// DefaultRevokeKeep is how long a revocation is kept at least: the
// longest a token issued before it may still be valid (auth's default TTL
// is a day).
const DefaultRevokeKeep = 30 * 24 * time.Hour

// revokeRequest is the body of POST /v1/devices/revoke.
type revokeRequest struct {
	DeviceID string `json:"device_id"`
}

type revokeResponse struct {
	DeviceID        string `json:"device_id,omitempty"`
	RevokedBeforeMS int64  `json:"revoked_before_ms"`
}

// revokeDevices answers POST /v1/devices/revoke: the tokens of one of the
// user's devices (or of all of them, this request's included, when no
// device is named) issued until now are refused from now on, and their
// live connections close within a few seconds on every node.
func (s *Server) revokeDevices(r *http.Request, id auth.Identity) (int, any, error) {
	var body revokeRequest
	if err := readJSON(r, &body); err != nil {
		return 0, nil, err
	}
	if body.DeviceID != "" {
		if err := schemas.ValidID("device_id", body.DeviceID); err != nil {
			return 0, nil, invalidField("", err)
		}
	}
	at := s.cfg.Clock()
	if err := s.router.Main().Revoke(r.Context(), id.User, body.DeviceID, at, DefaultRevokeKeep); err != nil {
		return 0, nil, err
	}
	s.log.Info("revoked", "user", id.User, "device", body.DeviceID)
	return http.StatusOK, revokeResponse{DeviceID: body.DeviceID, RevokedBeforeMS: at.UnixMilli()}, nil
}
