package main

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/offlinebox/offlinebox/bench/checker"
	"github.com/offlinebox/offlinebox/chstore"
)

// lineage is what the history's epochs table says of the epochs rebuilds
// started (repair-evicted records each before it commits it): per
// conversation, per rebuilt epoch, its parent and the base counter. A
// rebuilt epoch's seqs 1..base carry the parent's messages (as the
// parent's own lineage resolves them) and are never written to
// im.sequenced again; only its seqs above base are.
type lineage map[string]map[uint64]chstore.EpochOrigin

// maxLineageSteps bounds how many rebuilds deep a place is resolved (as
// chstore resolves its views).
const maxLineageSteps = 64

// readLineage reads the epochs table.
func (e *env) readLineage(ctx context.Context) (lineage, error) {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	_, rows, err := e.ch.Query(ctx, "SELECT conv_id, epoch, parent, base FROM epochs "+
		"ORDER BY conv_id, epoch, created_at DESC LIMIT 1 BY conv_id, epoch")
	if err != nil {
		return nil, fmt.Errorf("read epochs: %w", err)
	}
	lin := lineage{}
	for _, r := range rows {
		var v [3]uint64
		for i := range v {
			if v[i], err = strconv.ParseUint(r[i+1], 10, 64); err != nil {
				return nil, fmt.Errorf("read epochs: %q: %w", r[i+1], err)
			}
		}
		conv := unquote(r[0])
		if lin[conv] == nil {
			lin[conv] = map[uint64]chstore.EpochOrigin{}
		}
		lin[conv][v[0]] = chstore.EpochOrigin{Epoch: v[0], Parent: v[1], Base: v[2]}
	}
	return lin, nil
}

// epochs counts the rebuilt epochs.
func (l lineage) epochs() int {
	n := 0
	for _, es := range l {
		n += len(es)
	}
	return n
}

// resolve returns the place im.sequenced named the message a place of a
// rebuilt epoch carries: for a seq up to the epoch's base, the parent's
// place (again resolved), else the place itself.
func (l lineage) resolve(p checker.Place) checker.Place {
	for range maxLineageSteps {
		o, ok := l[p.Conv][p.Epoch]
		if !ok || o.Parent >= p.Epoch || p.Seq > o.Base {
			return p
		}
		p.Epoch = o.Parent
	}
	return p
}

// acrossEpochs checks each rebuilt epoch against the one it started from,
// in what im.sequenced logged (place to client_msg_id): the epoch's own
// records (seqs above base) carry no message its inherited seqs already
// carry and reuse no inherited seq for another message (doubled), and
// every message the parent was given above the base (sequenced after the
// history's counter the rebuild read) is carried by the rebuilt epoch
// again (dropped otherwise).
func (l lineage) acrossEpochs(logged map[checker.Place]string, note func(string, ...any)) (doubled, dropped int) {
	byEpoch := map[[2]string]map[uint64]string{}
	for p, id := range logged {
		k := [2]string{p.Conv, strconv.FormatUint(p.Epoch, 10)}
		if byEpoch[k] == nil {
			byEpoch[k] = map[uint64]string{}
		}
		byEpoch[k][p.Seq] = id
	}
	of := func(conv string, epoch uint64) map[uint64]string {
		return byEpoch[[2]string{conv, strconv.FormatUint(epoch, 10)}]
	}
	for conv, origins := range l {
		for _, o := range origins {
			inherited := map[string]uint64{}
			for s := uint64(1); s <= o.Base; s++ {
				if id, ok := logged[l.resolve(checker.Place{Conv: conv, Epoch: o.Epoch, Seq: s})]; ok && id != "" {
					inherited[id] = s
				}
			}
			own := map[string]bool{}
			for s, id := range of(conv, o.Epoch) {
				own[id] = true
				if at, ok := inherited[id]; ok && id != "" && at != s {
					doubled++
					note("%s epoch %d gives %s seq %d, which it carries at inherited seq %d", conv, o.Epoch, id, s, at)
				} else if s <= o.Base {
					if was := logged[l.resolve(checker.Place{Conv: conv, Epoch: o.Epoch, Seq: s})]; was != id {
						doubled++
						note("%s epoch %d logs seq %d as %s, which it inherited as %s", conv, o.Epoch, s, id, was)
					}
				}
			}
			for s, id := range of(conv, o.Parent) {
				if s > o.Base && id != "" && !own[id] {
					if _, ok := inherited[id]; !ok {
						dropped++
						note("%s epoch %d seq %d (%s), above the base %d, is not in the rebuilt epoch %d", conv, o.Parent, s, id, o.Base, o.Epoch)
					}
				}
			}
		}
	}
	return doubled, dropped
}
