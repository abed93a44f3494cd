package edge

import (
	"errors"
	"net/http"
)

// What a bearer token's check answers besides the keyring's own errors.
var (
	ErrRevoked = errors.New("the token was revoked")
	// ErrRevocationsUnread: the user's revocations could not be read (the
	// store is down), so the token is neither accepted nor refused.
	ErrRevocationsUnread = errors.New("the token's revocations could not be read")
)

// ErrUnauthorized answers a request without a valid token.
var ErrUnauthorized = &Error{Status: http.StatusUnauthorized, Code: "unauthorized", Msg: "a valid bearer token is required"}

// TokenRefusal answers a token that did not verify: 401, or 503 when the
// revocations could not be read.
func TokenRefusal(err error) *Error {
	if !errors.Is(err, ErrRevocationsUnread) {
		return ErrUnauthorized
	}
	return &Error{Status: http.StatusServiceUnavailable, Code: "unavailable", Msg: "the token's revocations could not be read; retry later"}
}
