package client

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"
)

// StatusError is an answer other than 2xx, decoded from the API's error
// format ({"error": {"code", "field", "message"}}). Use errors.As to get
// it, or errors.Is with the sentinels below to ask what kind it is.
type StatusError struct {
	Status int
	// Code, Field and Message are the API's error object (empty when the
	// answer was not one, e.g. a proxy's page).
	Code    string
	Field   string
	Message string
	// RetryAfter is the answer's Retry-After (0 when absent).
	RetryAfter time.Duration
	// Body is the answer as received.
	Body string
}

func (e *StatusError) Error() string {
	switch {
	case e.Code == "":
		return fmt.Sprintf("status %d: %s", e.Status, e.Body)
	case e.Field != "":
		return fmt.Sprintf("status %d %s: %s: %s", e.Status, e.Code, e.Field, e.Message)
	}
	return fmt.Sprintf("status %d %s: %s", e.Status, e.Code, e.Message)
}

// Sentinels for errors.Is on a *StatusError.
var (
	// ErrBadRequest: the request was refused as malformed (400); Field names the part.
	ErrBadRequest = errors.New("bad request")
	// ErrUnauthorized: the token is missing, invalid or expired (401).
	ErrUnauthorized = errors.New("unauthorized")
	// ErrForbidden: not the user's conversation, or not the token's device (403).
	ErrForbidden = errors.New("forbidden")
	// ErrEpochConflict: the epoch given is not the conversation's (409); sync to rebase.
	ErrEpochConflict = errors.New("epoch conflict")
	// ErrUnavailable: the server is busy or a store did not answer (503); retry after RetryAfter.
	ErrUnavailable = errors.New("unavailable")
)

// Is matches the sentinel of the answer's status.
func (e *StatusError) Is(target error) bool {
	switch target {
	case ErrBadRequest:
		return e.Status == http.StatusBadRequest
	case ErrUnauthorized:
		return e.Status == http.StatusUnauthorized
	case ErrForbidden:
		return e.Status == http.StatusForbidden
	case ErrEpochConflict:
		return e.Status == http.StatusConflict
	case ErrUnavailable:
		return e.Status == http.StatusServiceUnavailable
	}
	return false
}

// Retryable reports whether the same request may succeed later: the
// server was busy or failed, not the request.
func (e *StatusError) Retryable() bool {
	return e.Status == http.StatusTooManyRequests || e.Status >= 500 && e.Status != http.StatusNotImplemented
}

func statusError(resp *http.Response, body []byte) *StatusError {
	e := &StatusError{Status: resp.StatusCode, Body: string(body)}
	var eb struct {
		Error struct {
			Code    string `json:"code"`
			Field   string `json:"field"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if json.Unmarshal(body, &eb) == nil {
		e.Code, e.Field, e.Message = eb.Error.Code, eb.Error.Field, eb.Error.Message
	}
	if s, err := strconv.Atoi(resp.Header.Get("Retry-After")); err == nil && s >= 0 {
		e.RetryAfter = time.Duration(s) * time.Second
	}
	return e
}

// retryable reports whether err may pass on a later try: a retryable
// answer, or no answer at all (the server is down or the network failed).
func retryable(err error) bool {
	var se *StatusError
	if errors.As(err, &se) {
		return se.Retryable()
	}
	return err != nil && !errors.Is(err, errDecode)
}

// errDecode marks an answer that could not be decoded: trying again
// gets the same answer.
var errDecode = errors.New("undecodable answer")
