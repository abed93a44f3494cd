package schemas

import (
	"cmp"

	"google.golang.org/protobuf/proto"

	"github.com/offlinebox/offlinebox/bounds"
)

// Defaults of Limits. Each one keeps a message that could never be produced
// or delivered out of the pipeline: the API answers 400 and fanout
// dead-letters the record before it is sequenced, so no seq is ever given
// to something im.sequenced cannot carry.
const (
	// DefaultMaxBodyBytes is the largest message body.
	DefaultMaxBodyBytes = 64 << 10
	// DefaultMaxMentions is the most users one message @mentions by name
	// (@all mentions everyone with one flag).
	DefaultMaxMentions = 1000
	// DefaultMaxRecipients is the most users one record names: a direct
	// message has one; a join or leave names at most this many (a larger
	// group is founded with several joins).
	DefaultMaxRecipients = 5000
	// DefaultMaxRecordBytes is the largest encoded Message. Its sequenced
	// copy adds at most SequencedOverhead, and its dead letter a few
	// headers, so both stay well below Kafka's default limit of 1 MB
	// (message.max.bytes, and franz-go's ProducerBatchMaxBytes).
	DefaultMaxRecordBytes = 768 << 10
)

// SequencedOverhead is the most bytes a Sequenced record adds to the
// encoded Message it wraps: the message's tag and length, seq, epoch and
// write time, and the wrapped data key of a sealed body.
const SequencedOverhead = 1 + 3 + 3*(1+10) + 1 + 2 + MaxDataKeyBytes

// MaxDataKeyBytes bounds a wrapped data key's stored form.
const MaxDataKeyBytes = 512

// Limits bound what one message may carry. The API and fanout must use the
// same ones (cmd/offlinebox wires both from the defaults). Zero fields take
// the defaults.
type Limits struct {
	BodyBytes   int
	Mentions    int
	Recipients  int
	RecordBytes int
}

// WithDefaults fills the zero fields (a negative one takes its default
// too: Validate refuses it, but a caller that skips Validate gets a limit
// that can work).
func (l Limits) WithDefaults() Limits {
	l.BodyBytes = cmp.Or(max(l.BodyBytes, 0), DefaultMaxBodyBytes)
	l.Mentions = cmp.Or(max(l.Mentions, 0), DefaultMaxMentions)
	l.Recipients = cmp.Or(max(l.Recipients, 0), DefaultMaxRecipients)
	l.RecordBytes = cmp.Or(max(l.RecordBytes, 0), DefaultMaxRecordBytes)
	return l
}

// Validate reports the first limit that cannot work.
func (l Limits) Validate() error {
	d := l.WithDefaults()
	return bounds.First("limits",
		bounds.NotNegative("BodyBytes", l.BodyBytes),
		bounds.NotNegative("Mentions", l.Mentions),
		bounds.NotNegative("Recipients", l.Recipients),
		bounds.NotNegative("RecordBytes", l.RecordBytes),
		bounds.If(d.RecordBytes < d.BodyBytes, "RecordBytes %d is below BodyBytes %d", d.RecordBytes, d.BodyBytes),
	)
}

// check applies the counts and sizes of l (with defaults) to m, cheapest
// first; the record size names the field that takes most of it.
func (l Limits) check(m *Message) error {
	switch {
	case len(m.GetMentions()) > l.Mentions:
		return invalid("mentions", "names %d users, more than the limit of %d (use mention_all for everyone)", len(m.GetMentions()), l.Mentions)
	case len(m.GetRecipients()) > l.Recipients:
		return invalid("recipients", "names %d users, more than the limit of %d", len(m.GetRecipients()), l.Recipients)
	case len(m.GetBody()) > l.BodyBytes:
		return invalid("body", "is %d bytes, more than the limit of %d", len(m.GetBody()), l.BodyBytes)
	}
	if size := proto.Size(m); size > l.RecordBytes {
		field, part := "body", len(m.GetBody())
		if n := idsBytes(m.GetRecipients()); n > part {
			field, part = "recipients", n
		}
		if n := idsBytes(m.GetMentions()); n > part {
			field, part = "mentions", n
		}
		return invalid(field, "makes the message %d bytes (%d of them here), more than the record limit of %d", size, part, l.RecordBytes)
	}
	return nil
}

func idsBytes(ids []string) int {
	n := 0
	for _, id := range ids {
		n += len(id)
	}
	return n
}
