package edge

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"strconv"
	"time"

	"github.com/offlinebox/offlinebox/auth"
	"github.com/offlinebox/offlinebox/redisstore"
	"github.com/offlinebox/offlinebox/redisstore/readpath"
	"github.com/offlinebox/offlinebox/schemas"
)

// WriteError answers e over HTTP as its wire.ErrorBody; a 503 or a 429
// tells the client to retry after retryAfter unless a Retry-After is set
// already.
func WriteError(w http.ResponseWriter, e *Error, retryAfter time.Duration) (status, size int) {
	if (e.Status == http.StatusServiceUnavailable || e.Status == http.StatusTooManyRequests) && w.Header().Get("Retry-After") == "" {
		w.Header().Set("Retry-After", strconv.Itoa(int(retryAfter/time.Second)))
	}
	data, err := json.Marshal(e.Body())
	status = e.Status
	if err != nil {
		data, status = []byte(`{"error":{"code":"internal","message":"could not encode the answer"}}`), http.StatusInternalServerError
	}
	w.Header().Set("Vary", "Accept-Encoding")
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	n, _ := w.Write(data)
	return status, n
}

// Classify maps a handler's error to its answer; what is not the
// client's is logged (under path, which names conversations, never
// bodies or tokens).
func Classify(log *slog.Logger, path string, err error) *Error {
	var ae *Error
	switch {
	case errors.As(err, &ae):
		return ae
	case errors.Is(err, readpath.ErrNotMember):
		return Forbidden("not a member of this conversation")
	case errors.Is(err, redisstore.ErrUserMoved):
		// The router routed again and was still refused: the move to the hot
		// store is under way. Nothing was written; the retry will land.
		return &Error{Status: http.StatusServiceUnavailable, Code: "unavailable", Msg: "this user's data is being moved; retry shortly"}
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled):
		log.Warn("api request timed out", "path", path, "err", err)
		return &Error{Status: http.StatusServiceUnavailable, Code: "unavailable", Msg: "the store did not answer in time; retry later"}
	}
	log.Error("api request failed", "path", path, "err", err)
	return &Error{Status: http.StatusInternalServerError, Code: "internal", Msg: "internal error"}
}

// DeviceOf picks the device of a request: the token's when it is pinned
// to one (a request naming another is refused), else the one named.
func DeviceOf(id auth.Identity, named, field string, required bool) (string, error) {
	switch {
	case id.Device != "" && named != "" && named != id.Device:
		return "", Forbidden("the token is for device %q, not %q", id.Device, named)
	case id.Device != "":
		return id.Device, nil
	case named == "" && !required:
		return "", nil
	case named == "":
		return "", BadRequest(field, "is required (or use a token with a device claim)")
	}
	if err := schemas.ValidID(field, named); err != nil {
		return "", InvalidField("", err)
	}
	return named, nil
}
