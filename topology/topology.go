package topology

import (
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/offlinebox/offlinebox/schemas"
	"github.com/offlinebox/offlinebox/stream"
	"github.com/offlinebox/offlinebox/workers/fanout"
	"github.com/offlinebox/offlinebox/workers/history"
	"github.com/offlinebox/offlinebox/workers/push"
)

// Stage is one consumer group of the pipeline.
type Stage struct {
	// Name is the worker's name (its subcommand, its logs' "worker").
	Name string
	// Group is the consumer group every process of the stage joins.
	Group string
	// Inputs are the topics the group consumes.
	Inputs []string
	// Outputs are the topics the stage's handler produces to; whoever
	// wires the handler or reads what it wrote takes the topic from here
	// (cmd/offlinebox gives it to the fanout worker, bench/chaos reads it).
	Outputs []string
	// DeadLetterTopic receives the records the handler gives up on.
	DeadLetterTopic string
	// MaxPollRecords bounds one poll (0: the runner's default).
	MaxPollRecords int
	// FetchMinBytes and FetchMaxWait shape the fetches (0: franz-go's
	// defaults): a sink that wants large batches waits for them, a stage
	// on the live path answers within milliseconds.
	FetchMinBytes int32
	FetchMaxWait  time.Duration
	// StartAtEnd: a group with no committed offset (or one fallen out of
	// retention) starts at the newest record instead of the oldest, for a
	// stage whose records are worth nothing late (QoS 0).
	StartAtEnd bool
}

// Groups of the stages.
const (
	GroupFanout        = "offlinebox-fanout"
	GroupConvindex     = "offlinebox-convindex"
	GroupHistory       = "offlinebox-history"
	GroupPush          = "offlinebox-push"
	GroupPushEphemeral = "offlinebox-push-ephemeral"
	GroupPushRejected  = "offlinebox-push-rejected"
)

// Fanout sequences im.messages into the timelines and inboxes and
// produces what it sequenced.
func Fanout() Stage {
	return Stage{Name: "fanout", Group: GroupFanout, Inputs: []string{schemas.TopicMessages},
		Outputs: []string{schemas.TopicSequenced}, DeadLetterTopic: schemas.TopicDeadLetter,
		MaxPollRecords: fanout.RecommendedMaxPollRecords}
}

// Convindex keeps previews, read seqs and unread counts.
func Convindex() Stage {
	return Stage{Name: "convindex", Group: GroupConvindex,
		Inputs: []string{schemas.TopicSequenced, schemas.TopicReceipts}, DeadLetterTopic: schemas.TopicDeadLetter}
}

// History writes im.sequenced to ClickHouse in few large inserts, so it
// fetches a megabyte or a second at a time.
func History() Stage {
	return Stage{Name: "history", Group: GroupHistory, Inputs: []string{schemas.TopicSequenced},
		DeadLetterTopic: schemas.TopicDeadLetter, MaxPollRecords: history.RecommendedMaxPollRecords,
		FetchMinBytes: 1 << 20, FetchMaxWait: time.Second}
}

// livePathWait is the longest a live-path fetch waits for records.
const livePathWait = 20 * time.Millisecond

// Push rings the API nodes holding recipients' live connections with
// what fanout stored.
func Push() Stage {
	return Stage{Name: "push", Group: GroupPush, Inputs: []string{schemas.TopicSequenced},
		DeadLetterTopic: schemas.TopicDeadLetter, FetchMaxWait: livePathWait}
}

// ephemeralFetchWait and ephemeralFetchBytes: the QoS 0 records' fetch
// answers at 64 KB or after 50 ms. im.messages is mostly stored records,
// which the push stage skips (they come back sequenced); a fetch answered
// for each of them cost a fetch, a poll and a call of their own, as much
// as pushing the record once sequenced. A typing notice 50 ms late is
// not noticed.
const (
	ephemeralFetchWait  = 50 * time.Millisecond
	ephemeralFetchBytes = 64 << 10
)

// PushEphemeral pushes the QoS 0 records (typing, presence) of
// im.messages, which fanout drops: in a group of its own, so that the
// stored records' push keeps fetching each record as it comes. A QoS 0
// record is worth nothing late, so a new group starts at the newest.
func PushEphemeral() Stage {
	return Stage{Name: "push-ephemeral", Group: GroupPushEphemeral, Inputs: []string{schemas.TopicMessages},
		DeadLetterTopic: schemas.TopicDeadLetter, FetchMaxWait: ephemeralFetchWait, FetchMinBytes: ephemeralFetchBytes,
		StartAtEnd: true}
}

// PushRejected tells senders about refused records: it reads the
// dead-letter topic, which the other groups' runners write and so cannot
// read themselves.
func PushRejected() Stage {
	return Stage{Name: "push-rejected", Group: GroupPushRejected, Inputs: []string{schemas.TopicDeadLetter},
		DeadLetterTopic: push.UnusedDeadLetterTopic, FetchMaxWait: livePathWait}
}

// PushStages are the push stage's groups, all run by one handler: what
// was sequenced, the QoS 0 records, the refusals.
func PushStages() []Stage {
	return []Stage{Push(), PushEphemeral(), PushRejected()}
}

// Stages are every stage, in pipeline order.
func Stages() []Stage {
	return append([]Stage{Fanout(), Convindex(), History()}, PushStages()...)
}

// Topics are the topics the pipeline needs: what the stages and the API
// read and write (the API produces im.messages and im.receipts), and
// every stage's dead-letter topic, push-rejected's too: nothing is
// written there today, but its runner may produce to it, and a broker
// that does not create topics on demand would fail that produce, so it is
// created with the others and listed with them.
func Topics() []string {
	return []string{schemas.TopicMessages, schemas.TopicSequenced, schemas.TopicReceipts, schemas.TopicDeadLetter,
		push.UnusedDeadLetterTopic}
}

// RunnerConfig is the stream.Config of the stage on brokers; the caller
// adds its logger, metrics and any setting of its own.
func (s Stage) RunnerConfig(brokers []string) stream.Config {
	return stream.Config{Brokers: brokers, Group: s.Group, Topics: s.Inputs, DeadLetterTopic: s.DeadLetterTopic,
		MaxPollRecords: s.MaxPollRecords, ExtraOpts: s.ClientOpts()}
}

// ClientOpts are the stage's fetch settings as client options.
func (s Stage) ClientOpts() []kgo.Opt {
	var opts []kgo.Opt
	if s.FetchMinBytes > 0 {
		opts = append(opts, kgo.FetchMinBytes(s.FetchMinBytes))
	}
	if s.FetchMaxWait > 0 {
		opts = append(opts, kgo.FetchMaxWait(s.FetchMaxWait))
	}
	if s.StartAtEnd {
		opts = append(opts, kgo.ConsumeResetOffset(kgo.NewOffset().AtEnd()))
	}
	return opts
}
