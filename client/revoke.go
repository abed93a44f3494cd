package client

import (
	"context"
	"net/http"
)

// RevokeDevice revokes one of the user's devices (every device, this
// client's token included, when device is empty): their tokens issued
// until now are refused from now on and their live connections close
// (4013). It returns the time the revocation covers, ms since the epoch.
func (c *Client) RevokeDevice(ctx context.Context, device string) (int64, error) {
	var out struct {
		RevokedBeforeMS int64 `json:"revoked_before_ms"`
	}
	in := map[string]any{}
	if device != "" {
		in["device_id"] = device
	}
	if _, err := c.do(ctx, http.MethodPost, "/v1/devices/revoke", in, &out); err != nil {
		return 0, err
	}
	return out.RevokedBeforeMS, nil
}
