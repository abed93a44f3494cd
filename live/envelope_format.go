package live

import (
	"fmt"
)

// Format is the form a Bus publishes batches in. Readers decode both
// (Decode); what a publisher may send depends on its readers: API nodes
// of a release before the binary form read only JSON, so a publisher
// sends binary only once every API node runs a release that reads it.
type Format string

// Publish formats. The zero Format is DefaultFormat.
const (
	// FormatJSON is the form every release reads.
	FormatJSON Format = "json"
	// FormatBinary is LiveBatch of schemas/offlinebox.proto
	// (envelope_wire.go): fewer bytes and allocations on both ends.
	FormatBinary Format = "binary"
)

// DefaultFormat is what a publisher sends unless told otherwise: the form
// every reader reads, so that a rolling upgrade never strands an API node
// not upgraded yet. An operator turns on FormatBinary once every API node
// runs this release or a later one.
const DefaultFormat = FormatJSON

// ParseFormat reads a format's name ("json" or "binary"; empty is
// DefaultFormat).
func ParseFormat(s string) (Format, error) {
	f := Format(s)
	if err := f.Validate(); err != nil {
		return "", err
	}
	return f.orDefault(), nil
}

// Validate reports a format that is none of the known ones; the zero
// Format is valid (DefaultFormat).
func (f Format) Validate() error {
	switch f {
	case "", FormatJSON, FormatBinary:
		return nil
	}
	return fmt.Errorf("unknown live bus format %q (%s or %s)", string(f), FormatJSON, FormatBinary)
}

func (f Format) orDefault() Format {
	if f == "" {
		return DefaultFormat
	}
	return f
}

// Encode renders b for the wire in format f.
func (f Format) Encode(b Batch) ([]byte, error) {
	switch f.orDefault() {
	case FormatJSON:
		return encodeJSON(b)
	case FormatBinary:
		return encodeBinary(b), nil
	}
	return nil, f.Validate()
}
