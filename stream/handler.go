package stream

import (
	"context"

	"github.com/twmb/franz-go/pkg/kgo"
)

// Handler processes the records of one partition.
type Handler interface {
	// Handle gets records of ONE partition, in offset order. Returning nil
	// means every effect of every record (including dead letters returned)
	// may be committed. An error means nothing of this batch is committed:
	// the runner retries the SAME records with backoff until ctx ends.
	//
	// Handle is called concurrently for different partitions, never for
	// the same partition. A rebalance never happens while it runs, so it
	// must return in well under the group's rebalance timeout: every call
	// it makes needs a timeout of its own.
	Handle(ctx context.Context, records []*kgo.Record) (dead []DeadLetter, err error)
}

// HandlerFunc adapts a function to Handler.
type HandlerFunc func(ctx context.Context, records []*kgo.Record) ([]DeadLetter, error)

// Handle calls f.
func (f HandlerFunc) Handle(ctx context.Context, records []*kgo.Record) ([]DeadLetter, error) {
	return f(ctx, records)
}

// DeadLetter is a record the handler gives up on (it can never succeed, such
// as undecodable input), with the reason. The runner produces it to the
// dead-letter topic, with the original key, value and headers, before it
// commits the batch it came from.
type DeadLetter struct {
	Record *kgo.Record
	Reason string
	// Headers are added to the dead letter after the runner's own (kept
	// on a bare one too): what a reader of the dead-letter topic needs
	// beside the reason (schemas.HeaderDeadSeq, HeaderDeadCode).
	Headers []kgo.RecordHeader
	// Value, when not nil, is written in place of the record's value (a
	// copy with what must not be kept left out, schemas.HeaderDeadBodyDigest);
	// an empty, non-nil Value writes none.
	Value []byte
}
