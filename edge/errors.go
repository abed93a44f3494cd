package edge

import (
	"errors"
	"fmt"
	"net/http"

	"github.com/offlinebox/offlinebox/schemas"
	"github.com/offlinebox/offlinebox/wire"
)

// Error is an error answered to the client: over HTTP as a
// wire.ErrorBody with Status, on the live channel as an error frame.
type Error struct {
	Status int
	Code   string
	Field  string
	Msg    string
}

func (e *Error) Error() string {
	if e.Field != "" {
		return e.Field + ": " + e.Msg
	}
	return e.Msg
}

// Body is the error's JSON answer.
func (e *Error) Body() wire.ErrorBody {
	return wire.ErrorBody{Error: wire.ErrorDetail{Code: e.Code, Field: e.Field, Message: e.Msg}}
}

// BadRequest is a 400 naming field.
func BadRequest(field, format string, args ...any) *Error {
	return &Error{Status: http.StatusBadRequest, Code: "bad_request", Field: field, Msg: fmt.Sprintf(format, args...)}
}

// Forbidden is a 403.
func Forbidden(format string, args ...any) *Error {
	return &Error{Status: http.StatusForbidden, Code: "forbidden", Msg: fmt.Sprintf(format, args...)}
}

// Conflict is a 409 naming field.
func Conflict(field, format string, args ...any) *Error {
	return &Error{Status: http.StatusConflict, Code: "conflict", Field: field, Msg: fmt.Sprintf(format, args...)}
}

// EpochMismatch answers an epoch that is not the conversation's. Epochs
// only grow, so one above the current was never issued: bad input (400).
// One below is of an older timeline, or made up (the server keeps no list
// of past epochs): 409, and sync rebases whichever it was. Both name the
// current epoch.
func EpochMismatch(field string, asked, current uint64) *Error {
	if asked > current {
		return BadRequest(field, "%d was never the conversation's epoch: it is at epoch %d", asked, current)
	}
	return Conflict(field, "%d is not the conversation's current epoch %d; sync again to rebase", asked, current)
}

// InvalidField turns a schemas validation error into a 400 under prefix.
func InvalidField(prefix string, err error) *Error {
	var ie *schemas.InvalidError
	if errors.As(err, &ie) {
		return BadRequest(JoinField(prefix, ie.Field), "%s", ie.Reason)
	}
	return BadRequest(prefix, "%v", err)
}

// JoinField names field under prefix (a.b).
func JoinField(prefix, field string) string {
	switch {
	case prefix == "":
		return field
	case field == "":
		return prefix
	}
	return prefix + "." + field
}
