package readpath

import "github.com/offlinebox/offlinebox/schemas"

// How a sync answer shares its byte budget.
//
// The budget (SyncRequest.MaxBytes, DefaultSyncBytes unless the client
// asks for another within MinSyncBytes..MaxSyncBytes) bounds the answer as
// the SyncSizer measures it: the encoded answer as the client decodes it,
// before any content coding (which only shrinks it on the wire). The
// conversations are placed first, in priority order (pending mentions,
// direct, then activity), with room held back for the mention lane; then
// the summaries of what did not fit; then the lane, newest first, in the
// room held back and what is left, the rest paged (sync_mentions.go). The
// answer lists the lane first.
//
// Two passes keep the budget fair without changing the order:
//
//  1. Every conversation in priority order, a wave of syncWave of them per
//     round trip (sync_fill.go). A group's slice is capped at
//     MaxBytes/groupSliceShare (8 KB of the default 128 KB; at least its
//     newest message): its mentions are in the lane, so its slice
//     is context, and in the founding scenario the noisy group's newest
//     200 messages would otherwise take the budget before any direct
//     conversation. Direct conversations are not capped. A slice that will
//     not fit is not worth reading, so each conversation's size is
//     estimated first (its news, capped by the limit, times the bytes per
//     message measured so far in this answer, syncGuessMessageBytes before
//     any) and a conversation estimated not to fit is passed over, to be
//     looked at again once the sizes measured say it fits. The first
//     conversation always gets at least its newest message, so every
//     answer makes progress. Meanwhile the summaries are kept room for: all
//     of them, up to MaxBytes/summaryReserveShare.
//  2. What is left extends the capped slices, in priority order, towards
//     the limit (sync_extend.go), with room kept for exactly the summaries
//     still to come. A slice is always the newest messages of its news,
//     contiguous, with the gap below it named.
//
// The timeline script (lua/sync_range.lua) cuts a slice on raw entry bytes
// (rangeQuery.maxBytes, the room left or the group's cap), so that Redis
// does not copy entries the answer cannot hold; an encoded message is
// never smaller than its raw entry, so the cut never drops what would have
// fitted, and the sizer then measures exactly.
const (
	// DefaultSyncBytes is the budget of an answer the client sets none for.
	DefaultSyncBytes = 128 << 10
	// MinSyncBytes and MaxSyncBytes bound the budget a client may ask for.
	MinSyncBytes = 4 << 10
	MaxSyncBytes = 1 << 20

	// groupSliceShare: a group's first-pass slice is capped at
	// MaxBytes/groupSliceShare unless SyncRequest.GroupSliceBytes says
	// otherwise.
	groupSliceShare = 16
	// summaryReserveShare: the first pass holds back room for the
	// summaries, at most MaxBytes/summaryReserveShare.
	summaryReserveShare = 8
	// syncWave bounds the slices read per round trip.
	syncWave = 16
	// syncGuessMessageBytes is the size guessed for a message before any
	// was measured.
	syncGuessMessageBytes = 512
)

// SyncSizer measures what each part adds to the encoded answer, so that
// Sync keeps the answer within its byte budget without knowing the
// encoding. Conv and Summary may over-estimate; Message should be exact.
type SyncSizer interface {
	// Envelope is the answer without any mention, conversation or summary.
	Envelope() int
	Mention(m SyncMention) int
	// Conv is a conversation block without its messages.
	Conv(c *SyncConv) int
	// Message is one message inside a conversation block.
	Message(m *schemas.Sequenced) int
	Summary(s SyncSummary) int
}

// SyncReadSizer is a SyncSizer that measures the entries of one slice
// read at once: every entry of the read, in order, sizes[i] what
// Message(entries[i]) would say. Reads shared by many syncs (a reconnect
// storm) are then looked up once per read rather than once per entry.
type SyncReadSizer interface {
	Messages(entries []*schemas.Sequenced, sizes []int)
}

// readSizes measures every entry of one slice read.
func readSizes(z SyncSizer, entries []*schemas.Sequenced) []int {
	sizes := make([]int, len(entries))
	if rz, ok := z.(SyncReadSizer); ok {
		rz.Messages(entries, sizes)
		return sizes
	}
	for i, e := range entries {
		sizes[i] = z.Message(e)
	}
	return sizes
}

// groupCap is the most bytes of a conversation's slice in the first pass
// (0: no cap).
func (r SyncRequest) groupCap(p convPlan) int {
	c := r.GroupSliceBytes
	if c == 0 {
		c = r.MaxBytes / groupSliceShare
	}
	if p.direct() || c >= r.MaxBytes {
		return 0
	}
	return c
}

// syncBudget tracks the bytes of the answer. reserved is held back for the
// summaries while conversations are placed, lane for the mention lane
// (sync_mentions.go): laneHeld is what each mention it holds room for
// takes of it, given back when a slice carries the mention.
type syncBudget struct {
	max, used, reserved, lane int
	laneHeld                  map[laneKey]int
}

// laneKey names a mention by its conversation and seq.
type laneKey struct {
	conv string
	seq  uint64
}

// held is the room the lane holds for the mention (0: none).
func (b *syncBudget) held(conv string, seq uint64) int { return b.laneHeld[laneKey{conv, seq}] }

// release gives back the room held for a mention a slice carries.
func (b *syncBudget) release(conv string, seq uint64) {
	k := laneKey{conv, seq}
	if n, ok := b.laneHeld[k]; ok {
		b.lane -= n
		delete(b.laneHeld, k)
	}
}

func newSyncBudget(req SyncRequest) *syncBudget {
	return &syncBudget{max: req.MaxBytes, used: req.Sizer.Envelope()}
}

func (b *syncBudget) left() int { return b.max - b.used - b.reserved - b.lane }

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

// reserveSummaries holds back room for every summary the plans might need
// (the first pass: which conversations get a summary is not known yet).
func (b *syncBudget) reserveSummaries(req SyncRequest, plans []convPlan) {
	n := 0
	for _, p := range plans {
		n += req.Sizer.Summary(summaryOf(p))
	}
	b.reserved = min(n, b.max/summaryReserveShare)
}

// syncEstimate predicts a slice's bytes from the messages measured so far.
type syncEstimate struct{ bytes, msgs int }

func (e *syncEstimate) observe(bytes, msgs int) { e.bytes, e.msgs = e.bytes+bytes, e.msgs+msgs }

func (e *syncEstimate) slice(req SyncRequest, p convPlan) int {
	per := syncGuessMessageBytes
	if e.msgs > 0 {
		per = e.bytes / e.msgs
	}
	n := int(min(uint64(req.Limit), subFloor(p.maxSeq, p.lo))) * per
	if c := req.groupCap(p); c > 0 {
		return min(n, c)
	}
	return n
}
