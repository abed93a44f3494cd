package client

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"strings"
)

// ErrNoDevice is Open's error for a token without a device claim: a
// device's cursors, acks and sync are kept per device, and the server
// refuses a sync with no device.
var ErrNoDevice = errors.New("the token names no device (its \"dev\" claim): mint one with a device, e.g. `offlinebox token USER -device D`")

// tokenNamesDevice reads the token's payload (unverified: the server
// verifies it) and says whether it has a "dev" claim.
func tokenNamesDevice(token string) error {
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		return errors.New("the token is not a JWT (three dot-separated parts)")
	}
	raw, err := base64.RawURLEncoding.DecodeString(strings.TrimRight(parts[1], "="))
	if err != nil {
		return errors.New("the token's payload is not base64url")
	}
	var c struct {
		Device string `json:"dev"`
	}
	if err := json.Unmarshal(raw, &c); err != nil {
		return errors.New("the token's payload is not JSON")
	}
	if c.Device == "" {
		return ErrNoDevice
	}
	return nil
}
