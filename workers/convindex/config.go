package convindex

import (
	"cmp"
	"fmt"
	"log/slog"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/offlinebox/offlinebox/schemas"
)

// Config tunes the worker. Zero values take the defaults.
type Config struct {
	// SequencedTopic (schemas.TopicSequenced) and ReceiptsTopic
	// (schemas.TopicReceipts) name the topics; a record of any other topic
	// is a dead letter.
	SequencedTopic string
	ReceiptsTopic  string
	// Logger (slog.Default when nil).
	Logger *slog.Logger
	// Metrics registers the worker's metrics (none when nil).
	Metrics prometheus.Registerer
}

func (c Config) withDefaults() Config {
	c.SequencedTopic = cmp.Or(c.SequencedTopic, schemas.TopicSequenced)
	c.ReceiptsTopic = cmp.Or(c.ReceiptsTopic, schemas.TopicReceipts)
	c.Logger = cmp.Or(c.Logger, slog.Default())
	return c
}

// Validate reports the first field that is out of range.
func (c Config) Validate() error {
	c = c.withDefaults()
	if c.SequencedTopic == c.ReceiptsTopic {
		return fmt.Errorf("convindex: SequencedTopic and ReceiptsTopic are both %q", c.SequencedTopic)
	}
	return nil
}
