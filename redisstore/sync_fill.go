package redisstore

import (
	"context"
	"fmt"
)

// Filling the answer: conversations are sliced in priority order, a wave of
// them per round trip. A slice that will not fit is not worth reading, so
// each conversation's size is estimated first (its news, capped by the
// limit, times the bytes per message seen so far in this answer) and a
// conversation estimated not to fit is summarised without being read.
const (
	// syncWave bounds the slices read per round trip.
	syncWave = 16
	// syncGuessMessageBytes is the size guessed for a message before any
	// was measured.
	syncGuessMessageBytes = 512
)

// syncBudget tracks the bytes of the answer. reserved is held back for the
// summaries while conversations are placed.
type syncBudget struct {
	max, used, reserved int
}

func newSyncBudget(req SyncRequest) *syncBudget {
	return &syncBudget{max: req.MaxBytes, used: req.Sizer.Envelope()}
}

func (b *syncBudget) left() int { return b.max - b.used - b.reserved }

// fits takes n bytes if they fit.
func (b *syncBudget) fits(n int) bool {
	if n > b.left() {
		return false
	}
	b.used += n
	return true
}

// force takes n bytes whether they fit or not.
func (b *syncBudget) force(n int) { b.used += n }

// syncEstimate predicts a slice's bytes from the messages measured so far.
type syncEstimate struct{ bytes, msgs int }

func (e *syncEstimate) observe(bytes, msgs int) { e.bytes, e.msgs = e.bytes+bytes, e.msgs+msgs }

func (e *syncEstimate) slice(limit int, p convPlan) int {
	per := syncGuessMessageBytes
	if e.msgs > 0 {
		per = e.bytes / e.msgs
	}
	return int(min(uint64(limit), subFloor(p.maxSeq, p.lo))) * per
}

// placement is what became of one planned conversation.
type placement int

const (
	placeSummary placement = iota // did not fit, or was estimated not to
	placeSlice                    // answered with its slice
	placeGone                     // nothing to say after all (left, expired)
)

// fillConvs places conversations while the budget lasts, then summarises
// the others in priority order.
func (s *Store) fillConvs(ctx context.Context, req SyncRequest, plans []convPlan, res *SyncResult, b *syncBudget) error {
	outcome := make([]placement, len(plans))
	b.reserved = min(summariesBytes(req, plans), b.max/8)
	est := &syncEstimate{}
	for _, m := range res.Mentions {
		est.observe(req.Sizer.Message(m.Message), 1)
	}
	for next := 0; next < len(plans) && b.left() > 0; {
		wave, scanned := pickWave(req, plans, next, len(res.Convs) == 0, b.left(), est)
		next = scanned
		if len(wave) == 0 {
			continue
		}
		qs := make([]rangeQuery, len(wave))
		for i, j := range wave {
			p := plans[j]
			qs[i] = rangeQuery{conv: p.conv, lo: p.lo, limit: req.Limit, fromTop: true, maxBytes: b.left()}
		}
		callCtx, cancel := context.WithTimeout(ctx, s.cfg.CallTimeout)
		sls, err := s.readSlices(callCtx, req.User, qs)
		cancel()
		if err != nil {
			return fmt.Errorf("sync %s: %w", req.User, err)
		}
		for i, j := range wave {
			outcome[j] = place(req, plans[j], sls[i], res, b, est)
		}
	}
	b.reserved = 0
	for j, p := range plans {
		if outcome[j] == placeSummary {
			summarise(req, p, res, b)
		}
	}
	return nil
}

// pickWave chooses, from plans[from:], the conversations to read next: in
// order, those estimated to fit in room (the first conversation of the
// answer always). It returns their indexes and where the scan stopped.
func pickWave(req SyncRequest, plans []convPlan, from int, first bool, room int, est *syncEstimate) ([]int, int) {
	var wave []int
	j := from
	for ; j < len(plans) && len(wave) < syncWave; j++ {
		cost := est.slice(req.Limit, plans[j])
		if (first && len(wave) == 0) || cost <= room {
			wave = append(wave, j)
			room -= cost
		}
	}
	return wave, j
}

func summariesBytes(req SyncRequest, plans []convPlan) int {
	n := 0
	for _, p := range plans {
		n += req.Sizer.Summary(summaryOf(p))
	}
	return n
}

// place puts one conversation's slice in the answer: whole if it fits;
// trimmed to its newest messages if it is the first conversation (so every
// answer makes progress); else it is left for a summary.
func place(req SyncRequest, p convPlan, sl timelineSlice, res *SyncResult, b *syncBudget, est *syncEstimate) placement {
	if !sl.member {
		return placeGone
	}
	c := SyncConv{
		Conv: p.conv, Kind: p.kind, Large: p.large, Epoch: sl.epoch, MaxSeq: sl.seq, Unread: p.unread,
		Rebase: p.rebase != "", RebaseReason: p.rebase, Incomplete: p.incomplete,
	}
	if len(sl.entries) == 0 && !c.Rebase {
		return placeGone // the news was already gone (expired) or never there
	}
	sizes := make([]int, len(sl.entries))
	total := 0
	for i, e := range sl.entries {
		sizes[i] = req.Sizer.Message(e)
		total += sizes[i]
	}
	est.observe(total, len(sizes))
	head := req.Sizer.Conv(&c)
	keep := len(sl.entries)
	// The script cut the slice on raw bytes: it cannot fit whole.
	cut := len(sl.entries) < min(req.Limit, sl.available)
	if cut || !b.fits(head+total) {
		if len(res.Convs) > 0 {
			return placeSummary
		}
		keep = newestThatFit(sizes, b.left()-head)
		kept := 0
		for _, n := range sizes[len(sizes)-keep:] {
			kept += n
		}
		b.force(head + kept)
	}
	c.Messages = sl.entries[len(sl.entries)-keep:]
	finishSlice(&c, p, sl)
	res.Convs = append(res.Convs, c)
	return placeSlice
}

// newestThatFit counts how many of the last sizes fit in room (at least 1).
func newestThatFit(sizes []int, room int) int {
	n, used := 0, 0
	for i := len(sizes) - 1; i >= 0; i-- {
		if used+sizes[i] > room && n > 0 {
			break
		}
		used += sizes[i]
		n++
	}
	return n
}

// finishSlice sets HasMore and the gap once the messages are chosen.
func finishSlice(c *SyncConv, p convPlan, sl timelineSlice) {
	if len(c.Messages) == 0 {
		return
	}
	oldest := c.Messages[0].Seq
	floor := max(p.lo, sl.joined, sl.first-1)
	c.HasMore = oldest > floor+1
	if c.HasMore && !c.Rebase {
		c.Gap = &SeqRange{From: floor + 1, To: oldest - 1}
	}
}

func summaryOf(p convPlan) SyncSummary {
	return SyncSummary{Conv: p.conv, Kind: p.kind, Large: p.large, Epoch: p.epoch, MaxSeq: p.maxSeq, Unread: p.unread, Mentions: p.mentions}
}

// summarise lists a conversation that did not fit, if its summary fits.
func summarise(req SyncRequest, p convPlan, res *SyncResult, b *syncBudget) {
	s := summaryOf(p)
	if b.fits(req.Sizer.Summary(s)) {
		res.Summaries = append(res.Summaries, s)
		return
	}
	res.Omitted++
}
