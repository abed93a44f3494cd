package readpath

import (
	"context"
	"fmt"
	"sort"
)

// Filling the answer: the first pass of the budget (sync_budget.go) places
// conversations a wave per round trip, then the second pass
// (sync_extend.go) extends the capped ones, then the summaries follow.

// placement is what became of one planned conversation.
type placement int

const (
	placeSummary placement = iota // did not fit, or was estimated not to
	placeSlice                    // answered with its slice
	placeGone                     // nothing to say after all (left, expired)
)

// fillConvs places conversations while the budget lasts, extends the
// capped ones with what is left, then summarises the others in priority
// order.
func (s *Reader) fillConvs(ctx context.Context, req SyncRequest, plans []convPlan, res *SyncResult, b *syncBudget) error {
	outcome := make([]placement, len(plans))
	b.reserveSummaries(req, plans)
	fs, err := s.placeConvs(ctx, req, plans, outcome, res, b)
	if err != nil {
		return err
	}
	// Now the summaries to come are known exactly; the extension may have
	// the rest.
	b.reserved = 0
	for j, p := range plans {
		if outcome[j] == placeSummary {
			b.reserved += req.Sizer.Summary(summaryOf(p))
		}
	}
	if err := s.extendSlices(ctx, req, plans, fs.extensions(), res, b); err != nil {
		return err
	}
	b.reserved = 0
	for j, p := range plans {
		if outcome[j] == placeSummary {
			summarise(req, p, res, b)
		}
	}
	return nil
}

// firstSlices records, for each block of SyncResult.Convs, the plan it
// answers and whether its cap cut it.
type firstSlices struct {
	plan   []int
	capped []bool
}

// extensions lists the capped blocks in answer order.
func (f firstSlices) extensions() []extension {
	var out []extension
	for i, c := range f.capped {
		if c {
			out = append(out, extension{plan: f.plan[i], conv: i})
		}
	}
	return out
}

// placeConvs is the first pass: a wave of conversations per round trip,
// those estimated to fit, until the budget is spent or nothing left is
// estimated to fit. Each measured wave sharpens the estimate, so a
// conversation passed over by an early guess gets another look. The
// blocks are put back in priority order at the end.
func (s *Reader) placeConvs(ctx context.Context, req SyncRequest, plans []convPlan, outcome []placement, res *SyncResult, b *syncBudget) (firstSlices, error) {
	var fs firstSlices
	decided := make([]bool, len(plans))
	est := &syncEstimate{}
	for b.left() > 0 {
		wave := pickWave(req, plans, decided, len(res.Convs) == 0, b.left(), est)
		if len(wave) == 0 {
			break
		}
		qs := make([]rangeQuery, len(wave))
		readers := make([]sliceReader, len(wave))
		for i, j := range wave {
			p := plans[j]
			qs[i] = rangeQuery{conv: p.conv, lo: p.lo, limit: req.Limit, fromTop: true, maxBytes: b.left()}
			if c := req.groupCap(p); c > 0 {
				qs[i].maxBytes = c
			}
			readers[i] = p.reader()
		}
		callCtx, cancel := context.WithTimeout(ctx, s.cfg.CallTimeout)
		sls, err := s.readSlicesShared(callCtx, req.User, qs, readers)
		cancel()
		if err != nil {
			return fs, fmt.Errorf("sync %s: %w", req.User, err)
		}
		for i, j := range wave {
			decided[j] = true
			var more bool
			if outcome[j], more = place(req, plans[j], sls[i], res, b, est); outcome[j] == placeSlice {
				fs.plan, fs.capped = append(fs.plan, j), append(fs.capped, more)
			}
		}
	}
	return fs.inPlanOrder(res), nil
}

// inPlanOrder puts the blocks of res, placed wave by wave, back in the
// order of their plans (priority order).
func (f firstSlices) inPlanOrder(res *SyncResult) firstSlices {
	order := make([]int, len(res.Convs))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(x, y int) bool { return f.plan[order[x]] < f.plan[order[y]] })
	out := firstSlices{plan: make([]int, len(order)), capped: make([]bool, len(order))}
	convs := make([]SyncConv, len(order))
	for i, k := range order {
		convs[i], out.plan[i], out.capped[i] = res.Convs[k], f.plan[k], f.capped[k]
	}
	res.Convs = convs
	return out
}

// pickWave chooses, among the plans not decided yet, the conversations to
// read next: in order, those estimated to fit in room (the first
// conversation of the answer always).
func pickWave(req SyncRequest, plans []convPlan, decided []bool, first bool, room int, est *syncEstimate) []int {
	var wave []int
	for j := 0; j < len(plans) && len(wave) < syncWave; j++ {
		if decided[j] {
			continue
		}
		cost := est.slice(req, plans[j])
		if (first && len(wave) == 0) || cost <= room {
			wave = append(wave, j)
			room -= cost
		}
	}
	return wave
}

// place puts one conversation's slice in the answer: whole (a group's
// newest messages within its cap) if it fits; trimmed to its newest
// messages if it is the first conversation (so every answer makes
// progress); else it is left for a summary. more reports a group cut by
// its cap, which the second pass may extend.
func place(req SyncRequest, p convPlan, sl timelineSlice, res *SyncResult, b *syncBudget, est *syncEstimate) (pl placement, more bool) {
	if !sl.member {
		return placeGone, false
	}
	c := SyncConv{
		Conv: p.conv, Type: p.ctype, Large: p.large, Epoch: sl.epoch, MaxSeq: sl.seq, Unread: p.unread,
		Rebase: p.rebase != "", RebaseReason: p.rebase, Incomplete: p.incomplete, Left: p.left,
	}
	if len(sl.entries) == 0 && !c.Rebase {
		return placeGone, false // the news was already gone (expired) or never there
	}
	sizes := readSizes(req.Sizer, sl.entries)
	total := 0
	for _, n := range sizes {
		total += n
	}
	est.observe(total, len(sizes))
	head := req.Sizer.Conv(&c)
	whole := min(req.Limit, sl.available)
	keep, capBytes := len(sl.entries), req.groupCap(p)
	// Uncapped, a slice the script cut on raw bytes cannot fit whole.
	cut := capBytes == 0 && keep < whole
	if capBytes > 0 {
		keep = newestThatFit(sizes, capBytes-head)
	}
	if cut || !b.fits(head+sumNewest(sizes, keep)) {
		if len(res.Convs) > 0 {
			return placeSummary, false
		}
		keep = newestThatFit(sizes, b.left()-head)
		b.force(head + sumNewest(sizes, keep))
	}
	c.Messages = sl.entries[len(sl.entries)-keep:]
	for _, m := range c.Messages {
		b.release(c.Conv, m.Seq) // the lane need not repeat it
	}
	finishSlice(&c, p, sl)
	res.Convs = append(res.Convs, c)
	return placeSlice, capBytes > 0 && keep < whole
}

// sumNewest adds the last n sizes.
func sumNewest(sizes []int, n int) int {
	total := 0
	for _, s := range sizes[len(sizes)-n:] {
		total += s
	}
	return total
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
	// A kept cursor is the floor even below the window (the gap then
	// reaches into history: Incomplete); a rebase has no cursor, and
	// what it lacks starts at the window.
	floor := max(p.lo, sl.floor)
	if c.Rebase {
		floor = max(floor, sl.first-1)
	}
	c.HasMore = oldest > floor+1
	// The second pass extends slices the first one cut: the gap it named
	// may be closed now, and a gap over seqs the answer holds makes the
	// client fetch them again.
	c.Gap = nil
	if c.HasMore && !c.Rebase {
		c.Gap = &SeqRange{From: floor + 1, To: oldest - 1}
	}
}

func summaryOf(p convPlan) SyncSummary {
	return SyncSummary{Conv: p.conv, Type: p.ctype, Large: p.large, Epoch: p.epoch, MaxSeq: p.maxSeq, Unread: p.unread, Mentions: p.mentions}
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
