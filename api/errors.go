package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"reflect"
	"strings"

	"github.com/offlinebox/offlinebox/edge"
	"github.com/offlinebox/offlinebox/wire"
)

// apiError is an error answered to the client (edge.Error): as JSON
// {"error": {"code", "field", "message"}} over HTTP.
type apiError = edge.Error

// errorDetail is the JSON of every error answer's error.
type errorDetail = wire.ErrorDetail

var (
	badRequest    = edge.BadRequest
	forbidden     = edge.Forbidden
	epochMismatch = edge.EpochMismatch
	invalidField  = edge.InvalidField
	joinField     = edge.JoinField
)

var (
	errOverloaded = &apiError{Status: http.StatusServiceUnavailable, Code: "overloaded", Msg: "too many requests in flight; retry later"}
	errUserBusy   = &apiError{Status: http.StatusTooManyRequests, Code: "too_many_requests", Msg: "this user has too many requests under way; retry later"}
	errNoHistory  = &apiError{Status: http.StatusNotImplemented, Code: "not_implemented", Msg: "history is not configured on this server"}
)

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

// readJSON reads r's body and decodes it strictly into v, so that every
// handler taking a JSON object refuses an unreadable, empty or malformed
// one alike.
func readJSON(r *http.Request, v any) *apiError {
	data, aerr := readBody(r)
	if aerr != nil {
		return aerr
	}
	return decodeJSON(data, v, "")
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
