package wire

// ErrorBody is the JSON of every error answer of the HTTP API:
// {"error": {"code", "field", "message"}}.
type ErrorBody struct {
	Error ErrorDetail `json:"error"`
}

// ErrorDetail says what was refused: a stable code, the field at fault
// when there is one, and a message for people.
type ErrorDetail struct {
	Code    string `json:"code"`
	Field   string `json:"field,omitempty"`
	Message string `json:"message"`
}
