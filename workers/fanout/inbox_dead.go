package fanout

import (
	"fmt"
	"strings"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/offlinebox/offlinebox/redisstore"
	"github.com/offlinebox/offlinebox/stream"
)

// maxNamedRecipients bounds the recipients a dead letter's reason names:
// a script that fails for everyone must not make a reason of a group's
// size. The log line and the count say how many failed.
const maxNamedRecipients = 10

// inboxLetters are the dead letters of a merge batch whose inbox updates
// failed for good for some recipients: one per record whose seq an
// update that failed carried, naming the users it did not reach and why.
// The record keeps its seq, reached every other recipient and is produced
// to im.sequenced as any other; producing the dead letter to im.messages
// again, once the users' keys are repaired, finds the same seq (same
// client_msg_id) and delivers it to them. An update without a seq (a lone
// conversion to a large group) is charged as chargedRecord says.
func (f *Fanout) inboxLetters(res *convResult, conv string, sr *redisstore.SequenceResult, batch []pending,
	failed []failedUpdate) []stream.DeadLetter {
	if len(failed) == 0 {
		return nil
	}
	res.charge(deadInbox, len(failed))
	type letter struct {
		rec     *kgo.Record
		seq     uint64
		reasons []string // "user: error", one per failed update
		// chargedSeq: the seq of the record charged with updates that
		// carried no seq of the batch (the letter's seq is then 0).
		chargedSeq uint64
	}
	var letters []*letter
	bySeq := map[uint64]*letter{}
	for i, it := range sr.Items {
		if sq := it.Sequenced; sq != nil && bySeq[sq.GetSeq()] == nil { // a refused record has none
			l := &letter{rec: batch[i].rec, seq: sq.GetSeq()}
			bySeq[l.seq] = l
			letters = append(letters, l)
		}
	}
	first := &letter{}
	first.rec, first.chargedSeq = chargedRecord(sr, batch)
	for _, fu := range failed {
		why := fu.update.User + ": " + fu.err.Error()
		charged := false
		for _, e := range fu.update.Events {
			if l := bySeq[e.Seq]; l != nil && (len(l.reasons) == 0 || l.reasons[len(l.reasons)-1] != why) {
				l.reasons = append(l.reasons, why)
				charged = true
			}
		}
		if !charged {
			first.reasons = append(first.reasons, why)
		}
	}
	if len(first.reasons) > 0 {
		letters = append(letters, first)
	}
	var dead []stream.DeadLetter
	for _, l := range letters {
		if len(l.reasons) == 0 {
			continue
		}
		named := l.reasons[:min(len(l.reasons), maxNamedRecipients)]
		list := strings.Join(named, "; ")
		if more := len(l.reasons) - len(named); more > 0 {
			list += fmt.Sprintf("; and %d more", more)
		}
		at := fmt.Sprintf("sequenced as seq %d of %s (epoch %d)", l.seq, conv, sr.Epoch)
		if l.seq == 0 {
			at = fmt.Sprintf("in a batch of %s (epoch %d)", conv, sr.Epoch)
		}
		f.logFailedForGood(res, "inbox updates that can never succeed", "the message is dead-lettered for their users",
			"conv", conv, "seq", l.seq, "epoch", sr.Epoch, "users", len(l.reasons), "first", l.reasons[0])
		dead = append(dead, stream.DeadLetter{Record: l.rec, Headers: sequencedHeaders(max(l.seq, l.chargedSeq)), Reason: fmt.Sprintf(
			"%s, but its inbox update failed for good for %d recipients: %s", at, len(l.reasons), list)})
	}
	return dead
}
