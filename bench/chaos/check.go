package main

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/offlinebox/offlinebox/bench/checker"
	"github.com/offlinebox/offlinebox/schemas"
	"github.com/offlinebox/offlinebox/topology"
	"github.com/offlinebox/offlinebox/verify"
)

// historyCheck compares the history store with the log's truth: every
// seq of every conversation is there, once (replayed inserts collapse).
type historyCheck struct {
	Missing int `json:"missing"`
	// Extra: seqs the history holds beyond the log's (never allowed).
	Extra int `json:"extra"`
	// ReplayRows: rows beyond one per seq, not merged yet (allowed: reads
	// collapse them).
	ReplayRows int `json:"replay_rows"`
}

func (h historyCheck) ok() bool { return h.Missing == 0 && h.Extra == 0 }

// checkHistory counts, per conversation, the distinct seqs and the rows
// the messages table holds against the log's max seq.
func (e *env) checkHistory(ctx context.Context, want map[string]uint64) (historyCheck, error) {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	_, rows, err := e.ch.Query(ctx, "SELECT conv_id, uniqExact(seq), max(seq), count() FROM messages GROUP BY conv_id")
	if err != nil {
		return historyCheck{}, fmt.Errorf("count history: %w", err)
	}
	var h historyCheck
	got := map[string][3]uint64{}
	for _, r := range rows {
		var v [3]uint64
		for i := range v {
			v[i], _ = strconv.ParseUint(r[i+1], 10, 64)
		}
		got[unquote(r[0])] = v
	}
	for conv, n := range want {
		g := got[conv]
		if g[0] < n {
			h.Missing += int(n - g[0])
		}
		if g[1] > n {
			h.Extra += int(g[1] - n)
		}
		h.ReplayRows += int(g[2] - g[0])
		delete(got, conv)
	}
	for _, g := range got {
		h.Extra += int(g[0])
	}
	return h, nil
}

// unquote undoes the quoting chstore.Query applies to strings.
func unquote(s string) string {
	if u, err := strconv.Unquote(s); err == nil {
		return u
	}
	if len(s) >= 2 && s[0] == '\'' && s[len(s)-1] == '\'' {
		return s[1 : len(s)-1]
	}
	return s
}

// verifyStore runs the invariant checker on the scenario's key space.
func (e *env) verifyStore(ctx context.Context) (*verify.Report, error) {
	c, err := verify.New(verify.Config{}, e.store, nil)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	return c.Run(ctx)
}

// deadLetters reads im.deadletter: distinct source records parked there,
// and how many of them carry no reason.
func (e *env) deadLetters(ctx context.Context) (distinct, noReason int, err error) {
	recs, err := checker.ReadTopic(ctx, e.brokers, schemas.TopicDeadLetter)
	if err != nil {
		return 0, 0, err
	}
	seen := map[string]bool{}
	for _, r := range recs {
		h := map[string]string{}
		for _, kv := range r.Headers {
			h[kv.Key] = string(kv.Value)
		}
		src := h[schemas.HeaderDeadTopic] + "/" + h[schemas.HeaderDeadPartition] + "/" + h[schemas.HeaderDeadOffset]
		if !seen[src] {
			seen[src] = true
			if h[schemas.HeaderDeadReason] == "" {
				noReason++
			}
		}
	}
	return len(seen), noReason, nil
}

// seqCheck proves that no (conversation, epoch, seq) ever named two
// messages: every record of im.sequenced, and every message any device
// stored, against each other.
type seqCheck struct {
	// Records of im.sequenced read.
	Records int `json:"sequenced_records"`
	// Places: distinct (conversation, epoch, seq) in im.sequenced.
	Places int `json:"places"`
	// Reused: places that carried two client_msg_ids in the changelog or
	// on devices; Unlogged: places devices stored that the changelog
	// never held. Both must be 0.
	Reused   int `json:"reused"`
	Unlogged int `json:"unlogged"`
	// RebuiltEpochs: epochs a rebuild started (the history's epochs
	// table); Inherited: places devices stored in them at seqs up to the
	// base, which im.sequenced logged under the parent epoch and are
	// checked there. Doubled: a rebuilt epoch's own records that carry a
	// message it inherited, or reuse an inherited seq; Dropped: messages
	// the parent was given above the base that the rebuilt epoch does not
	// carry. Both must be 0.
	RebuiltEpochs int `json:"rebuilt_epochs"`
	Inherited     int `json:"inherited_places"`
	Doubled       int `json:"doubled_across_epochs"`
	Dropped       int `json:"dropped_across_epochs"`
	// Examples of the first few findings.
	Examples []string `json:"examples,omitempty"`
}

func (c seqCheck) ok() bool {
	return c.Reused == 0 && c.Unlogged == 0 && c.Doubled == 0 && c.Dropped == 0
}

func (e *env) checkSeqs(ctx context.Context, placed map[checker.Place]map[string]bool) (seqCheck, error) {
	recs, err := checker.ReadTopic(ctx, e.brokers, topology.Fanout().Outputs[0])
	if err != nil {
		return seqCheck{}, err
	}
	lin, err := e.readLineage(ctx)
	if err != nil {
		return seqCheck{}, err
	}
	return compareSeqs(recs, placed, lin)
}

// compareSeqs checks the records of im.sequenced against each other, then
// against the devices and the lineage (compareLogged).
func compareSeqs(recs []*kgo.Record, placed map[checker.Place]map[string]bool, lin lineage) (seqCheck, error) {
	logged := map[checker.Place]string{}
	var reused []string
	for _, r := range recs {
		sq, err := schemas.DecodeSequenced(r.Value)
		if err != nil {
			return seqCheck{}, fmt.Errorf("im.sequenced %d/%d: %w", r.Partition, r.Offset, err)
		}
		p := checker.Place{Conv: sq.GetMessage().GetConvId(), Epoch: sq.GetEpoch(), Seq: sq.GetSeq()}
		id := sq.GetMessage().GetClientMsgId()
		if prev, ok := logged[p]; !ok {
			logged[p] = id
		} else if prev != id {
			reused = append(reused, fmt.Sprintf("im.sequenced gives %s epoch %d seq %d to %s and %s", p.Conv, p.Epoch, p.Seq, prev, id))
		}
	}
	c := compareLogged(logged, reused, placed, lin)
	c.Records = len(recs)
	return c, nil
}

// compareLogged checks the places devices stored against what
// im.sequenced logged (place to client_msg_id; reusedLogged: the places
// it gave two messages, described), a rebuilt epoch's inherited places
// resolved through lin, and every rebuilt epoch against its parent.
func compareLogged(logged map[checker.Place]string, reusedLogged []string, placed map[checker.Place]map[string]bool, lin lineage) seqCheck {
	c := seqCheck{RebuiltEpochs: lin.epochs(), Reused: len(reusedLogged)}
	note := func(f string, a ...any) {
		if len(c.Examples) < 10 {
			c.Examples = append(c.Examples, fmt.Sprintf(f, a...))
		}
	}
	for _, r := range reusedLogged {
		note("%s", r)
	}
	reused := map[checker.Place]bool{}
	for at, ids := range placed {
		p := lin.resolve(at)
		if p != at {
			c.Inherited++
		}
		id, ok := logged[p]
		switch {
		case !ok:
			c.Unlogged++
			note("devices hold %s epoch %d seq %d, which im.sequenced never had (as epoch %d)", at.Conv, at.Epoch, at.Seq, p.Epoch)
		case len(ids) > 1 || !ids[id]:
			if !reused[p] {
				reused[p] = true
				note("devices hold %s epoch %d seq %d as %v, im.sequenced (epoch %d) as %s", at.Conv, at.Epoch, at.Seq, ids, p.Epoch, id)
			}
		}
	}
	c.Doubled, c.Dropped = lin.acrossEpochs(logged, note)
	c.Places, c.Reused = len(logged), c.Reused+len(reused)
	return c
}
