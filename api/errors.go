package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"reflect"
	"strings"

	"github.com/offlinebox/offlinebox/schemas"
)

// apiError is an error answered to the client as JSON:
// {"error": {"code", "field", "message"}}.
type apiError struct {
	status int
	code   string
	field  string
	msg    string
}

func (e *apiError) Error() string {
	if e.field != "" {
		return e.field + ": " + e.msg
	}
	return e.msg
}

// errorBody is the JSON of every error answer.
type errorBody struct {
	Error errorDetail `json:"error"`
}

type errorDetail struct {
	Code    string `json:"code"`
	Field   string `json:"field,omitempty"`
	Message string `json:"message"`
}

func badRequest(field, format string, args ...any) *apiError {
	return &apiError{status: http.StatusBadRequest, code: "bad_request", field: field, msg: fmt.Sprintf(format, args...)}
}

func forbidden(format string, args ...any) *apiError {
	return &apiError{status: http.StatusForbidden, code: "forbidden", msg: fmt.Sprintf(format, args...)}
}

func conflict(field, format string, args ...any) *apiError {
	return &apiError{status: http.StatusConflict, code: "conflict", field: field, msg: fmt.Sprintf(format, args...)}
}

// epochMismatch answers an epoch that is not the conversation's. Epochs
// only grow, so one above the current was never issued: bad input (400).
// One below is of an older timeline, or made up (the server keeps no list
// of past epochs): 409, and sync rebases whichever it was. Both name the
// current epoch.
func epochMismatch(field string, asked, current uint64) *apiError {
	if asked > current {
		return badRequest(field, "%d was never the conversation's epoch: it is at epoch %d", asked, current)
	}
	return conflict(field, "%d is not the conversation's current epoch %d; sync again to rebase", asked, current)
}

var (
	errUnauthorized = &apiError{status: http.StatusUnauthorized, code: "unauthorized", msg: "a valid bearer token is required"}
	errOverloaded   = &apiError{status: http.StatusServiceUnavailable, code: "overloaded", msg: "too many requests in flight; retry later"}
	errUserBusy     = &apiError{status: http.StatusTooManyRequests, code: "too_many_requests", msg: "this user has too many requests under way; retry later"}
	errNoHistory    = &apiError{status: http.StatusNotImplemented, code: "not_implemented", msg: "history is not configured on this server"}
)

// invalidField turns a schemas validation error into a 400 under prefix.
func invalidField(prefix string, err error) *apiError {
	var ie *schemas.InvalidError
	if errors.As(err, &ie) {
		return badRequest(joinField(prefix, ie.Field), "%s", ie.Reason)
	}
	return badRequest(prefix, "%v", err)
}

func joinField(prefix, field string) string {
	switch {
	case prefix == "":
		return field
	case field == "":
		return prefix
	}
	return prefix + "." + field
}

// decodeJSON decodes one JSON object strictly: invalid UTF-8, keys given
// twice, unknown fields (names match exactly: case counts), trailing data
// and wrong types are errors naming the field (under prefix). Every
// request body of the API goes through it.
func decodeJSON(data []byte, v any, prefix string) *apiError {
	if err := checkJSON(data, reflect.TypeOf(v), prefix); err != nil {
		return err
	}
	d := json.NewDecoder(bytes.NewReader(data))
	d.DisallowUnknownFields()
	if err := d.Decode(v); err != nil {
		return decodeError(prefix, err)
	}
	if _, err := d.Token(); err != io.EOF {
		return badRequest(joinField(prefix, "body"), "trailing data after the JSON object")
	}
	return nil
}

// readBody returns a request body; serve has read it already, within the
// server's size and time limits.
func readBody(r *http.Request) ([]byte, *apiError) {
	data, err := io.ReadAll(r.Body)
	var tooBig *http.MaxBytesError
	switch {
	case errors.As(err, &tooBig):
		return nil, badRequest("body", "is larger than %d bytes", tooBig.Limit)
	case err != nil:
		return nil, badRequest("body", "could not be read: %v", err)
	case len(bytes.TrimSpace(data)) == 0:
		return nil, badRequest("body", "is empty; a JSON object is required")
	}
	return data, nil
}

func decodeError(prefix string, err error) *apiError {
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syn):
		return badRequest(joinField(prefix, "body"), "malformed JSON at offset %d", syn.Offset)
	case errors.As(err, &typ) && typ.Field == "":
		return badRequest(joinField(prefix, "body"), "is a JSON %s, not an object", typ.Value)
	case errors.As(err, &typ):
		return badRequest(joinField(prefix, typ.Field), "%s is not a valid %s", typ.Value, typeName(typ.Type.String()))
	case errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF):
		return badRequest(joinField(prefix, "body"), "incomplete JSON")
	}
	if name, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
		return badRequest(joinField(prefix, strings.Trim(name, `"`)), "is not a known field")
	}
	return badRequest(joinField(prefix, "body"), "%v", err)
}

func typeName(t string) string {
	switch {
	case strings.HasPrefix(t, "uint"):
		return "non-negative integer"
	case strings.HasPrefix(t, "int"):
		return "integer"
	case strings.HasPrefix(t, "map"), strings.HasPrefix(t, "struct"), strings.HasPrefix(t, "api."):
		return "object"
	case strings.HasPrefix(t, "[]uint8"):
		return "base64 string"
	case strings.HasPrefix(t, "[]"):
		return "array"
	}
	return t
}
