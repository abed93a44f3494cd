package stream

import (
	"context"
	"errors"
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/offlinebox/offlinebox/backoff"
	"github.com/offlinebox/offlinebox/schemas"
)

// errNilDeadRecord is the error of a Handle call that returned a dead letter
// without its record: the handler is broken, and the batch is retried.
var errNilDeadRecord = errors.New("handler returned a dead letter without a record")

// partitionBatch is the records of one partition from one poll, in order.
type partitionBatch struct {
	tp      topicPartition
	records []*kgo.Record
}

// splitByPartition groups the polled records by partition, keeping offset
// order. A partition can appear in more than one fetch of a poll.
func splitByPartition(fetches kgo.Fetches) []partitionBatch {
	var batches []partitionBatch
	index := make(map[topicPartition]int)
	fetches.EachPartition(func(p kgo.FetchTopicPartition) {
		if len(p.Records) == 0 {
			return
		}
		tp := topicPartition{p.Topic, p.Partition}
		i, ok := index[tp]
		if !ok {
			i = len(batches)
			index[tp] = i
			batches = append(batches, partitionBatch{tp: tp})
		}
		batches[i].records = append(batches[i].records, p.Records...)
	})
	return batches
}

// handlePartition handles one partition's batch and produces its dead
// letters, each retried with backoff. It returns true when the batch may be
// committed, false when ctx ended or a rebalance is waiting (abort) before
// that: the batch is then handled again later, by this member or the next
// owner.
func (r *Runner) handlePartition(ctx context.Context, abort <-chan struct{}, b partitionBatch) bool {
	first := b.records[0].Offset
	attempts := r.state.stalledAttempts(b.tp, first)
	// A handler call, once started, is never cancelled by the runner: a
	// rebalance or shutdown waits for it, so its effects are never cut in
	// half. Its own calls carry their own timeouts.
	hctx := context.WithoutCancel(ctx)
	var dead []DeadLetter
	for {
		if attempts > 0 && !r.wait(ctx, abort, attempts) {
			r.state.stall(b.tp, first, attempts)
			return false
		}
		var err error
		dead, err = r.handleOnce(hctx, b)
		if err == nil {
			break
		}
		attempts++
		r.m.retries.WithLabelValues(b.tp.topic).Inc()
		r.cfg.Logger.Warn("handle failed; retrying the same records", "group", r.cfg.Group,
			"topic", b.tp.topic, "partition", b.tp.partition, "offset", first,
			"records", len(b.records), "attempt", attempts, "err", err)
	}
	r.m.handled.WithLabelValues(b.tp.topic).Add(float64(len(b.records)))
	if len(dead) == 0 {
		return true
	}
	return r.produceDead(ctx, abort, hctx, b, dead)
}

func (r *Runner) handleOnce(ctx context.Context, b partitionBatch) ([]DeadLetter, error) {
	start := time.Now()
	dead, err := r.handler.Handle(ctx, b.records)
	r.m.handleSeconds.WithLabelValues(b.tp.topic).Observe(time.Since(start).Seconds())
	r.m.batchRecords.WithLabelValues(b.tp.topic).Observe(float64(len(b.records)))
	if err != nil {
		return nil, err
	}
	for _, d := range dead {
		if d.Record == nil {
			return nil, errNilDeadRecord
		}
	}
	return dead, nil
}

// produceDead produces the dead letters and waits for the broker's ack,
// retrying those that failed until all are acked or ctx or abort end it.
// Each attempt builds fresh records: franz-go owns a record's fields while
// it is being produced. A dead letter the broker refuses for good (too
// large, invalid) is sent again alone, since a broker refuses a whole batch
// for one record; refused alone, it goes without its value, so that it
// never blocks the partition: its headers still say where the original is.
func (r *Runner) produceDead(ctx context.Context, abort <-chan struct{}, pctx context.Context, b partitionBatch, dead []DeadLetter) bool {
	modes := make([]deadMode, len(dead))
	for attempts := 0; ; {
		if attempts > 0 && !r.wait(ctx, abort, attempts) {
			return false
		}
		var failed []DeadLetter
		var failedModes []deadMode
		var ferr error
		for i, err := range r.produceDeadOnce(pctx, dead, modes) {
			if err == nil {
				r.m.dead.WithLabelValues(b.tp.topic).Inc()
				continue
			}
			next := modes[i]
			if PermanentProduceError(err) && next < deadBare {
				next++
			}
			failed = append(failed, dead[i])
			failedModes = append(failedModes, next)
			ferr = err
		}
		if len(failed) == 0 {
			return true
		}
		dead, modes = failed, failedModes
		attempts++
		r.m.retries.WithLabelValues(b.tp.topic).Inc()
		r.cfg.Logger.Warn("produce dead letters failed; retrying", "group", r.cfg.Group,
			"topic", b.tp.topic, "partition", b.tp.partition, "dead_topic", r.cfg.DeadLetterTopic,
			"records", len(failed), "attempt", attempts, "err", ferr)
	}
}

// deadMode is how a dead letter is sent: with the others, alone, or alone
// and without its value.
type deadMode int

const (
	deadTogether deadMode = iota
	deadAlone
	deadBare
)

// produceDeadOnce sends every dead letter once, in its mode, and returns
// each one's error.
func (r *Runner) produceDeadOnce(pctx context.Context, dead []DeadLetter, modes []deadMode) []error {
	errs := make([]error, len(dead))
	produce := func(idx []int) {
		recs := make([]*kgo.Record, len(idx))
		from := make(map[*kgo.Record]int, len(idx))
		for k, i := range idx {
			recs[k] = r.deadRecord(dead[i], modes[i] == deadBare)
			from[recs[k]] = i
		}
		ctx, cancel := context.WithTimeout(pctx, r.cfg.ProduceTimeout)
		defer cancel()
		// Results come in the order the broker acknowledged them.
		for _, res := range r.cl.ProduceSync(ctx, recs...) {
			errs[from[res.Record]] = res.Err
		}
	}
	var together []int
	for i, m := range modes {
		if m == deadTogether {
			together = append(together, i)
		}
	}
	if len(together) > 0 {
		produce(together)
	}
	for i, m := range modes {
		if m != deadTogether {
			produce([]int{i})
		}
	}
	return errs
}

// PermanentProduceError reports whether the broker (or the client, before
// sending) refused a record for what it is, so that producing the same
// record again can never succeed: too large, or invalid for the topic.
// Anything else (timeouts, leaders moving, a broker that is down) is worth
// retrying.
func PermanentProduceError(err error) bool {
	return errors.Is(err, kerr.MessageTooLarge) || errors.Is(err, kerr.RecordListTooLarge) ||
		errors.Is(err, kerr.InvalidRecord)
}

// deadRecord is the dead letter's record: the original key, value and
// headers, plus headers naming where it came from and why it died. A bare
// one carries no value and no original headers, only the size of the value
// it leaves out.
func (r *Runner) deadRecord(d DeadLetter, bare bool) *kgo.Record {
	src := d.Record
	headers := make([]kgo.RecordHeader, 0, len(src.Headers)+5+len(d.Headers))
	value := src.Value
	if d.Value != nil {
		value = d.Value
	}
	if bare {
		value = nil
		headers = append(headers, kgo.RecordHeader{Key: schemas.HeaderDeadValueOmitted, Value: []byte(strconv.Itoa(len(src.Value)))})
	} else {
		headers = append(headers, src.Headers...)
	}
	headers = append(headers,
		kgo.RecordHeader{Key: schemas.HeaderDeadReason, Value: []byte(d.Reason)},
		kgo.RecordHeader{Key: schemas.HeaderDeadTopic, Value: []byte(src.Topic)},
		kgo.RecordHeader{Key: schemas.HeaderDeadPartition, Value: []byte(strconv.Itoa(int(src.Partition)))},
		kgo.RecordHeader{Key: schemas.HeaderDeadOffset, Value: []byte(strconv.FormatInt(src.Offset, 10))},
	)
	headers = append(headers, d.Headers...)
	key := src.Key
	if bare && len(key) > schemas.MaxIDBytes {
		key = nil
	}
	return &kgo.Record{Topic: r.cfg.DeadLetterTopic, Key: key, Value: value, Headers: headers}
}

// wait sleeps the backoff of the given attempt. It returns false, without
// waiting it out, when ctx ends or a rebalance is waiting.
func (r *Runner) wait(ctx context.Context, abort <-chan struct{}, attempt int) bool {
	return backoff.Policy{Min: r.cfg.RetryMin, Max: r.cfg.RetryMax}.Wait(ctx, attempt, abort) == nil
}
