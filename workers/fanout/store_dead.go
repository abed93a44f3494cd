package fanout

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
	"strconv"

	"github.com/twmb/franz-go/pkg/kgo"
	"google.golang.org/protobuf/proto"

	"github.com/offlinebox/offlinebox/redisstore"
	"github.com/offlinebox/offlinebox/schemas"
	"github.com/offlinebox/offlinebox/stream"
)

// The dead letters of records a store call can never succeed for
// (redisstore.Permanent: a key of the wrong type, a script error). The
// same call would fail the same way on every try, so the records go with
// the call's error and the partition moves on; once the key is repaired,
// producing a dead letter's value to im.messages again does what is
// missing, and nothing twice (the same client_msg_id finds its seq).

// unsequencedLetters are the dead letters of a merge batch the sequencing
// script refused for good. The script checks every key before its first
// write (lua/sequence.lua), so none of the records got a seq or changed
// anything: a replay is sequenced as a new record.
func (f *Fanout) unsequencedLetters(res *convResult, conv string, batch []pending, err error) []stream.DeadLetter {
	res.charge(deadSequence, len(batch))
	f.cfg.Logger.Error("sequencing can never succeed for a conversation; its records are dead-lettered",
		"conv", conv, "records", len(batch), "err", err)
	dead := make([]stream.DeadLetter, len(batch))
	for i, p := range batch {
		dead[i] = stream.DeadLetter{Record: p.rec, Headers: refusedHeaders(schemas.RefusalUnavailable), Reason: fmt.Sprintf(
			"not sequenced: the sequencing of %s can never succeed: %v", conv, err)}
	}
	return dead
}

// undeliveredLetters are the dead letters of a merge batch sequenced in a
// group that just became large, whose members could not be listed for
// good, so no inbox was converted or updated. The records keep their seqs
// and are produced to im.sequenced; the replay finds the same seqs and
// delivers them.
func (f *Fanout) undeliveredLetters(res *convResult, conv string, sr *redisstore.SequenceResult, batch []pending, err error) []stream.DeadLetter {
	var dead []stream.DeadLetter
	for i, it := range sr.Items {
		if it.Sequenced == nil {
			continue // refused (dead-lettered with its own reason), or an expired replay with nothing to deliver
		}
		dead = append(dead, stream.DeadLetter{Record: batch[i].rec, Headers: sequencedHeaders(it.Seq), Reason: fmt.Sprintf(
			"sequenced as seq %d of %s (epoch %d), but no inbox got it: the members of the group, now large, "+
				"can never be listed: %v", it.Seq, conv, sr.Epoch, err)})
	}
	res.charge(deadMembers, len(dead))
	f.logFailedForGood(res, "the members of a large group can never be listed", "its records are dead-lettered",
		"conv", conv, "records", len(dead), "err", err)
	return dead
}

// unmarkedLetter is the dead letter of a merge batch that reached every
// inbox, converted to the large form, but whose conversion mark could not
// be written for good. Nothing is missing but the mark: every later batch
// converts again (which changes nothing) until the key is repaired and
// the letter's replay writes it. It is charged as chargedRecord says.
func (f *Fanout) unmarkedLetter(res *convResult, conv string, sr *redisstore.SequenceResult, batch []pending, err error) stream.DeadLetter {
	res.charge(deadMarkLarge, 1)
	f.logFailedForGood(res, "a large group's conversion mark can never be written", "dead-lettered",
		"conv", conv, "err", err)
	rec, seq := chargedRecord(sr, batch)
	return stream.DeadLetter{Record: rec, Headers: sequencedHeaders(seq), Reason: fmt.Sprintf(
		"delivered in %s (epoch %d), but the mark that its members' inboxes are in the large form can never "+
			"be written: %v", conv, sr.Epoch, err)}
}

// logFailedForGood logs a store call that failed for good for a merge
// batch (failure says which) and what becomes of its records, which is
// the caller's to say: a batch dead-letters them (fate says how), a
// restore produces no letter (the records are im.sequenced's) and counts
// them as not re-applied (restoreMetrics.unapplied*), then goes on.
func (f *Fanout) logFailedForGood(res *convResult, failure, fate string, args ...any) {
	if res.restoring {
		f.cfg.Logger.Error("restore: "+failure+"; counted as not re-applied, and the restore goes on", args...)
		return
	}
	f.cfg.Logger.Error(failure+"; "+fate, args...)
}

// chargedRecord is the record a batch's failure that no one record
// caused is dead-lettered with, and its seq: its first record that was
// sequenced (a refused one has a dead letter of its own), else its first
// (seq 0). Either way the letter is not its sender's refusal.
func chargedRecord(sr *redisstore.SequenceResult, batch []pending) (*kgo.Record, uint64) {
	for i, it := range sr.Items {
		if it.Status == redisstore.SeqNew || it.Status == redisstore.SeqDuplicate {
			return batch[i].rec, it.Seq
		}
	}
	return batch[0].rec, 0
}

// refusedHeaders mark the dead letter of a record refused before it got
// a seq: its sender is told code (schemas.HeaderDeadCode), the reason
// staying the operator's.
func refusedHeaders(code string) []kgo.RecordHeader {
	return []kgo.RecordHeader{{Key: schemas.HeaderDeadSeq, Value: []byte("0")},
		{Key: schemas.HeaderDeadCode, Value: []byte(schemas.PublicRefusal(code))}}
}

// sequencedHeaders mark the dead letter of a record that was sequenced
// (seq; 0 for a failure no one record's seq carried): it reached its
// conversation, so no code, and its sender is never told it was refused.
func sequencedHeaders(seq uint64) []kgo.RecordHeader {
	return []kgo.RecordHeader{{Key: schemas.HeaderDeadSeq, Value: []byte(strconv.FormatUint(seq, 10))}}
}

// keylessLetter is the dead letter of a sealed record whose conversation's
// wrapped data key can never be read: it is not produced to im.sequenced
// without it (history could never open it). As with refusedLetter, its
// seq stays in the timeline and the inboxes; the replay finds the same
// seq and produces it with the key.
func (f *Fanout) keylessLetter(src *kgo.Record, sq *schemas.Sequenced, err error) stream.DeadLetter {
	conv := sq.GetMessage().GetConvId()
	f.cfg.Logger.Error("the wrapped data key of a sealed conversation can never be read; dead-lettered",
		"conv", conv, "seq", sq.GetSeq(), "err", err)
	return stream.DeadLetter{Record: src, Headers: sequencedHeaders(sq.GetSeq()), Reason: fmt.Sprintf(
		"sequenced as seq %d of %s (epoch %d), but not produced to the sequenced topic: its wrapped data key "+
			"can never be read: %v", sq.GetSeq(), conv, sq.GetEpoch(), err)}
}

// itemHeaders mark the dead letter of a record sequencing gave up on: a
// refusal by its code (the authority's and the schema's refusals by
// theirs, a race or a failure for good as the conversation being
// unavailable), and a duplicate whose stored entry cannot be read as the
// seq it already has.
func itemHeaders(it redisstore.SequencedItem) []kgo.RecordHeader {
	switch {
	case it.Status == redisstore.SeqFailed && it.Seq > 0:
		return sequencedHeaders(it.Seq)
	case it.Status == redisstore.SeqRejected:
		return refusedHeaders(schemas.RefusalOf(it.Reason))
	}
	return refusedHeaders(schemas.RefusalUnavailable)
}

// digestBodies leaves the bodies out of the dead letters' copies, where
// bodies are sealed at rest: a letter must not keep in the clear, for the
// dead-letter topic's retention, what the timelines and im.sequenced
// keep sealed. Each copy keeps every field but the body (sender, conv_id
// and client_msg_id still decode, so the push stage tells the sender),
// with the body's digest in schemas.HeaderDeadBodyDigest; a value that
// does not decode as a Message is left out whole, with its own digest.
// Such a letter is not replayed from its copy: its producer sends the
// record again.
func digestBodies(dead []stream.DeadLetter) {
	for i := range dead {
		dead[i] = digestBody(dead[i])
	}
}

func digestBody(d stream.DeadLetter) stream.DeadLetter {
	var m schemas.Message
	digested, value := d.Record.Value, []byte{}
	if err := proto.Unmarshal(d.Record.Value, &m); err == nil {
		digested = m.GetBody()
		m.Body = nil
		if v, err := proto.Marshal(&m); err == nil && v != nil {
			value = v
		}
	}
	sum := sha256.Sum256(digested)
	d.Value = value
	d.Headers = append(slices.Clip(d.Headers), kgo.RecordHeader{Key: schemas.HeaderDeadBodyDigest,
		Value: []byte("sha256:" + hex.EncodeToString(sum[:]))})
	return d
}
