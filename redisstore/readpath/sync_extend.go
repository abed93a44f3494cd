package readpath

import (
	"context"
	"fmt"
	"slices"

	"github.com/offlinebox/offlinebox/redisstore"
)

// extension names a group whose first-pass slice was cut by its cap: the
// plan it came from and its block in SyncResult.Convs.
type extension struct {
	plan, conv int
}

// extendSlices spends what the first pass left on the groups it capped, in
// priority order: each gets the messages just older than its slice, as
// many as fit, up to the limit. Its slice stays the newest messages of its
// news, contiguous, so the gap and has_more are only recomputed.
func (s *Reader) extendSlices(ctx context.Context, req SyncRequest, plans []convPlan, ext []extension, res *SyncResult, b *syncBudget) error {
	for start := 0; start < len(ext) && b.left() > 0; start += syncWave {
		wave := ext[start:min(start+syncWave, len(ext))]
		qs := make([]rangeQuery, len(wave))
		readers := make([]sliceReader, len(wave))
		for i, x := range wave {
			c := &res.Convs[x.conv]
			p := plans[x.plan]
			qs[i] = rangeQuery{conv: c.Conv, lo: p.lo, hi: c.Messages[0].Seq,
				limit: req.Limit - len(c.Messages), fromTop: true, maxBytes: extendReadBytes(b.left())}
			readers[i] = p.reader()
		}
		callCtx, cancel := context.WithTimeout(ctx, s.cfg.CallTimeout)
		sls, err := s.readSlicesShared(callCtx, req.User, qs, readers)
		cancel()
		if err != nil {
			return fmt.Errorf("sync %s: extend slices: %w", req.User, err)
		}
		for i, x := range wave {
			extendSlice(req, plans[x.plan], &res.Convs[x.conv], sls[i], b)
		}
	}
	return nil
}

// extendSlice prepends to c the newest of sl's entries that fit.
func extendSlice(req SyncRequest, p convPlan, c *SyncConv, sl timelineSlice, b *syncBudget) {
	// Another epoch means the timeline was rebuilt between the two reads:
	// its seqs name other messages. The first slice stands alone then.
	if !sl.member || sl.epoch != c.Epoch || len(sl.entries) == 0 {
		return
	}
	// The extension must end where the first slice begins, or step over
	// seqs the user may not read only (they left and came back: each span
	// is theirs, nothing between). Redis may lose its tail between the
	// reads (restarted from an older snapshot, the restore not done yet:
	// the same epoch, a lower max seq); joined then, the newest entries it
	// still holds would hide the seqs between with no gap named. The first
	// slice's gap stands.
	if readsAny(p.spans, sl.entries[len(sl.entries)-1].Seq+1, c.Messages[0].Seq-1) {
		return
	}
	// The read was cut on raw bytes to the room left: nearly all of it fits.
	sizes := readSizes(req.Sizer, sl.entries)
	n, used := 0, 0
	for i := len(sl.entries) - 1; i >= 0; i-- {
		// A mention the slice now carries gives back the room the lane
		// held for it.
		seq := sl.entries[i].Seq
		if used+sizes[i] > b.left()+b.held(c.Conv, seq) {
			break
		}
		b.release(c.Conv, seq)
		used += sizes[i]
		n++
	}
	if n == 0 {
		return
	}
	b.force(used)
	c.Messages = append(slices.Clip(sl.entries[len(sl.entries)-n:]), c.Messages...)
	c.Older += n
	finishSlice(c, p, sl)
}

// extendReadGrain: an extension read is cut on the room left rounded up
// to this, so that the syncs of one group's members, whose rooms differ by
// their mentions, ask the same read and share it (sync_collapse.go).
// extendSlice keeps the newest that fit the room exactly: an encoded entry
// is never smaller than its raw one, so the entries past the exact cut
// never fit, and what is kept is what the exact read would have given.
const extendReadGrain = 16 << 10

func extendReadBytes(room int) int {
	return (room + extendReadGrain - 1) / extendReadGrain * extendReadGrain
}

// readsAny reports whether any of spans covers a seq of [from, to].
func readsAny(spans []redisstore.MemberSpan, from, to uint64) bool {
	for _, sp := range spans {
		if from <= to && sp.Joined+1 <= to && (sp.Left == 0 || sp.Left-1 >= from) {
			return true
		}
	}
	return false
}
