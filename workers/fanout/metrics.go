package fanout

import (
	"hash/fnv"
	"strconv"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/offlinebox/offlinebox/promreg"

	"github.com/offlinebox/offlinebox/redisstore"
)

// failureBuckets is how many user-hash and conversation-hash buckets inbox
// writes and their failures are counted in: failures piling up in one
// bucket point at one hot shard (a user's keys, or a conversation's).
const failureBuckets = 16

// metrics are the worker's Prometheus series.
type metrics struct {
	merge         *prometheus.HistogramVec
	writes        *prometheus.CounterVec
	failures      *prometheus.CounterVec
	hotUsers      prometheus.Gauge
	sequenced     prometheus.Counter
	duplicates    prometheus.Counter
	rejected      prometheus.Counter
	refused       prometheus.Counter
	dropped       prometheus.Counter
	receiveOnly   prometheus.Counter
	inboxReplayed prometheus.Counter
	inboxDead     prometheus.Counter
	storeDead     *prometheus.CounterVec
	moves         *prometheus.CounterVec
	forwarded     prometheus.Counter
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	s := promreg.On(reg)
	m := &metrics{
		merge: s.HistogramVec("offlinebox_fanout_merge_size",
			"Records merged into one Redis call: stage=sequence per sequencing call, stage=inbox per recipient update.",
			[]float64{1, 2, 3, 5, 8, 12, 16, 20, 32}, "stage"),
		writes: s.CounterVec("offlinebox_fanout_inbox_writes_total",
			"Inbox updates attempted, by user-hash and conversation-hash bucket (divide the failures by it).", "user_bucket", "conv_bucket"),
		failures: s.CounterVec("offlinebox_fanout_inbox_write_failures_total",
			"Inbox updates that failed, by user-hash and conversation-hash bucket; the batch is retried, "+
				"unless the update can never succeed (see offlinebox_fanout_inbox_dead_lettered_total).", "user_bucket", "conv_bucket"),
		hotUsers:   s.Gauge("offlinebox_fanout_hot_users", "Users whose inbox write rate is far above the mean of the window."),
		sequenced:  s.Counter("offlinebox_fanout_messages_sequenced_total", "Records that got a new seq."),
		duplicates: s.Counter("offlinebox_fanout_duplicates_total", "Records whose client_msg_id was already sequenced (replays and resends)."),
		rejected:   s.Counter("offlinebox_fanout_invalid_records_total", "Records sent to the dead-letter topic."),
		refused: s.Counter("offlinebox_fanout_sequenced_refused_total",
			"Sequenced records the broker refused for good (its limit is below ours), dead-lettered: "+
				"their seqs are in Redis but not in history; any increase needs an operator."),
		dropped:       s.Counter("offlinebox_fanout_qos0_dropped_total", "At-most-once records (typing, presence), never stored."),
		receiveOnly:   s.Counter("offlinebox_fanout_receive_only_skipped_total", "Inbox updates not written because the account is receive-only."),
		inboxReplayed: s.Counter("offlinebox_fanout_inbox_replayed_total", "Inbox updates that changed nothing because they were already applied."),
		inboxDead: s.Counter("offlinebox_fanout_inbox_dead_lettered_total",
			"Inbox updates that can never succeed (a key of the wrong type, a script error), given up on: "+
				"their messages reached every other recipient and are dead-lettered naming the users; "+
				"any increase needs an operator."),
		storeDead: s.CounterVec("offlinebox_fanout_store_dead_lettered_total",
			"Records dead-lettered because a store call they depend on can never succeed (a key of the "+
				"wrong type, a script error), by call: sequence (never sequenced), members and data_key "+
				"(sequenced, not delivered or not produced), mark_large (delivered, the mark not written); "+
				"any increase needs an operator.", "call"),
		moves: s.CounterVec("offlinebox_fanout_hot_moves_total", "Hot users moved to the hot Redis, by result.", "result"),
		forwarded: s.Counter("offlinebox_fanout_forwarded_total",
			"Records read from a partition their conversation does not hash to (a producer with another "+
				"partitioner), produced again to the one it does instead of sequenced where they were read."),
	}
	return m, s.Err()
}

// failureBucket names the hash bucket of a user or conversation id.
func failureBucket(id string) string {
	h := fnv.New32a()
	_, _ = h.Write([]byte(id))
	return strconv.Itoa(int(h.Sum32() % failureBuckets))
}

// inboxWrite counts one attempted inbox update and, when failed, its
// failure, both under the buckets of its user and conversation.
func (m *metrics) inboxWrite(u redisstore.InboxUpdate, failed bool) {
	ub, cb := failureBucket(u.User), failureBucket(u.Conv)
	m.writes.WithLabelValues(ub, cb).Inc()
	if failed {
		m.failures.WithLabelValues(ub, cb).Inc()
	}
}

// countFailures adds failures for good (convResult.failures) to their
// series: records by call, inbox updates apart.
func countFailures(failures map[string]int, records *prometheus.CounterVec, updates prometheus.Counter) {
	for call, n := range failures {
		if call == deadInbox {
			updates.Add(float64(n))
		} else {
			records.WithLabelValues(call).Add(float64(n))
		}
	}
}
