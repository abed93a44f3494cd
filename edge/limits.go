package edge

// The bounds of a conversation list, by GET /v1/conversations or the
// live channel's notice.
const (
	DefaultListLimit = 50
	MaxListLimit     = 200
)
