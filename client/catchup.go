package client

import (
	"cmp"
	"context"
	"fmt"
	"time"
)

// HeldMsg is what the simulated device keeps of a stored message.
type HeldMsg struct {
	ClientMsgID string
	Kind        string
}

// HeldConv is the device's copy of one conversation.
type HeldConv struct {
	// Epoch is the timeline the cursor and gaps count in.
	Epoch uint64
	// Cursor is the highest seq held at the top: what sync continues from.
	Cursor uint64
	// Msgs holds every message stored, by its position: a seq names a
	// message only within its epoch, so after a rebuild the new epoch's
	// seq 41 is another message than the old epoch's 41, and both are
	// kept.
	Msgs map[Cursor]HeldMsg
	// Gaps are known missing seq ranges below Cursor, to page through.
	Gaps [][2]uint64
}

// Held is the device's local store.
type Held struct {
	Convs map[string]*HeldConv
	// Redelivered counts messages received again at a position already
	// held (a mention in the lane and again in its conversation's slice).
	Redelivered int
}

// NewHeld is an empty device store.
func NewHeld() *Held { return &Held{Convs: map[string]*HeldConv{}} }

func (h *Held) conv(id string) *HeldConv {
	c := h.Convs[id]
	if c == nil {
		c = &HeldConv{Msgs: map[Cursor]HeldMsg{}}
		h.Convs[id] = c
	}
	return c
}

// store keeps m at its (epoch, seq), its own epoch or, when it names none,
// the epoch of the answer it came in; it reports whether it was new.
func (h *Held) store(m *Message, epoch uint64) bool {
	c := h.conv(m.ConvID)
	at := Cursor{Seq: m.Seq, Epoch: cmp.Or(m.Epoch, epoch)}
	if _, ok := c.Msgs[at]; ok {
		h.Redelivered++
		return false
	}
	c.Msgs[at] = HeldMsg{ClientMsgID: m.ClientMsgID, Kind: m.Kind}
	return true
}

// Cursors are the device's cursors, as a sync request sends them.
func (h *Held) Cursors() map[string]Cursor {
	out := make(map[string]Cursor, len(h.Convs))
	for id, c := range h.Convs {
		if c.Cursor > 0 {
			out[id] = Cursor{Seq: c.Cursor, Epoch: c.Epoch}
		}
	}
	return out
}

// CatchUpOptions tune the simulated client.
type CatchUpOptions struct {
	// Limit per conversation and byte budget of each sync (0: the API's
	// defaults).
	Limit    int
	MaxBytes int
	// PageBytes is the byte budget of each gap page's JSON, PageLimit its
	// most messages (MaxPageLimit when 0): a background catch-up's pages
	// are bounded by bytes, not by a count. When PageBytes is 0, each page
	// aims at PageWireBytes on the wire (DefaultPageWireBytes when 0): its
	// budget is that times how many decoded bytes the answers so far
	// carried per byte on the wire, within the API's bounds.
	PageBytes     int
	PageWireBytes int
	PageLimit     int
	// SyncOnly stops after the syncs, leaving gaps unpaged.
	SyncOnly bool
	// MaxRounds bounds the syncs (10,000 when 0).
	MaxRounds int
}

// Gap pages of a catch-up: the budget of each page's JSON, and the most
// messages the API gives a page with a budget.
const (
	DefaultPageWireBytes = 128 << 10
	MinPageBytes         = 4 << 10
	MaxPageBytes         = 1 << 20
	MaxPageLimit         = 5000
)

// CatchUpStats describe one catch-up. Bytes are on the wire (as the
// answers came, compressed when the server chose to), but DecodedBytes.
type CatchUpStats struct {
	SyncResponses int
	PageResponses int
	FirstBytes    int
	// FirstDecodedBytes is the first answer's JSON.
	FirstDecodedBytes int
	MaxBytes          int
	TotalBytes        int64
	// DecodedBytes adds up the answers' JSON.
	DecodedBytes int64
	// First is the first sync answer, FirstLatency its time.
	First        SyncResponse
	FirstLatency time.Duration
	Duration     time.Duration
	// Incomplete counts gap ranges the window no longer held.
	Incomplete int
}

func (s *CatchUpStats) saw(wire, decoded int) {
	s.TotalBytes += int64(wire)
	s.DecodedBytes += int64(decoded)
	s.MaxBytes = max(s.MaxBytes, wire)
}

// CatchUp syncs, stores and acks until the server has nothing new, then
// pages through every gap it was told of, as a client that loses nothing
// would.
func (c *Client) CatchUp(ctx context.Context, held *Held, o CatchUpOptions) (CatchUpStats, error) {
	if o.PageWireBytes == 0 {
		o.PageWireBytes = DefaultPageWireBytes
	}
	if o.PageLimit == 0 {
		o.PageLimit = MaxPageLimit
	}
	if o.MaxRounds == 0 {
		o.MaxRounds = 10000
	}
	var st CatchUpStats
	start := time.Now()
	after := "" // where the mention lane continues
	for round := 0; ; round++ {
		if round == o.MaxRounds {
			return st, fmt.Errorf("catch-up: not done after %d syncs", round)
		}
		t0 := time.Now()
		resp, n, decoded, err := c.sync(ctx, SyncRequest{Cursors: held.Cursors(), Limit: o.Limit, MaxBytes: o.MaxBytes, MentionsAfter: after})
		if err != nil {
			return st, err
		}
		if round == 0 {
			st.First, st.FirstBytes, st.FirstDecodedBytes, st.FirstLatency = resp, n, decoded, time.Since(t0)
		}
		st.SyncResponses++
		st.saw(n, decoded)
		if len(resp.Conversations) == 0 && len(resp.Summaries) == 0 && resp.Omitted == 0 && !resp.MentionsMore {
			held.Apply(resp)
			break
		}
		if err := c.Ack(ctx, held.Apply(resp)); err != nil {
			return st, err
		}
		after = resp.nextMentions()
	}
	if !o.SyncOnly {
		if err := c.pageGaps(ctx, held, o, &st); err != nil {
			return st, err
		}
	}
	st.Duration = time.Since(start)
	return st, nil
}

// nextMentions is where the next sync continues the mention lane: after
// this page when it said there is more, else from the newest.
func (r *SyncResponse) nextMentions() string {
	if r.MentionsMore {
		return r.MentionsNext
	}
	return ""
}

// Apply stores one sync answer and returns what to ack.
func (h *Held) Apply(resp SyncResponse) []AckItem {
	for i := range resp.Mentions {
		m := &resp.Mentions[i].Message
		h.store(m, h.conv(m.ConvID).Epoch)
	}
	var acks []AckItem
	for i := range resp.Conversations {
		sc := &resp.Conversations[i]
		hc := h.conv(sc.ConvID)
		if len(hc.Msgs) == 0 && len(sc.Messages) > 8 {
			// Sized once for the slice rather than grown through it.
			hc.Msgs = make(map[Cursor]HeldMsg, len(sc.Messages))
		}
		gap, hasGap := hc.gapOf(sc)
		sameEpoch := hc.Epoch == 0 || hc.Epoch == sc.Epoch
		if sc.Rebase {
			// The old cursor means nothing to the answer's timeline (a new
			// epoch may restart below it): continue from the slice.
			hc.Cursor = 0
			if len(sc.Messages) == 0 {
				hc.Cursor = sc.MaxSeq
			}
		}
		for j := range sc.Messages {
			h.store(&sc.Messages[j], sc.Epoch)
			hc.Cursor = max(hc.Cursor, sc.Messages[j].Seq)
		}
		if hasGap && sameEpoch {
			gap, hasGap = hc.lacking(gap, sc.Epoch)
		}
		if hasGap {
			hc.Gaps = append(hc.Gaps, gap)
		}
		hc.Epoch = sc.Epoch
		if hc.Cursor > 0 {
			acks = append(acks, AckItem{ConvID: sc.ConvID, Seq: hc.Cursor, Epoch: hc.Epoch})
		}
	}
	return acks
}

// gapOf is the range older than sc's slice that the client still wants:
// the gap the server named, or on a rebase what lies between the cursor
// and the slice ("history" to the server).
func (hc *HeldConv) gapOf(sc *SyncConv) ([2]uint64, bool) {
	if len(sc.Messages) == 0 {
		return [2]uint64{}, false
	}
	first := sc.Messages[0].Seq
	switch {
	case sc.Gap != nil:
		return [2]uint64{sc.Gap.From, sc.Gap.To}, true
	case sc.Rebase && first > hc.Cursor+1:
		return [2]uint64{hc.Cursor + 1, first - 1}, true
	}
	return [2]uint64{}, false
}

// lacking trims from both ends of g the seqs of epoch already held. A named gap
// may cover what the device holds: the slice of the same answer, or,
// after a sync without cursors, what it stored above its acked cursor.
// Paging those again is waste. A held seq inside the range stays in it:
// splitting would cost a request to save a message.
func (hc *HeldConv) lacking(g [2]uint64, epoch uint64) ([2]uint64, bool) {
	from, to := g[0], g[1]
	for from <= to {
		if _, ok := hc.Msgs[Cursor{Seq: from, Epoch: epoch}]; !ok {
			break
		}
		from++
	}
	for to >= from {
		if _, ok := hc.Msgs[Cursor{Seq: to, Epoch: epoch}]; !ok {
			break
		}
		to--
	}
	return [2]uint64{from, to}, from <= to
}

// pageGaps reads every known gap, oldest first, page by page.
func (c *Client) pageGaps(ctx context.Context, held *Held, o CatchUpOptions, st *CatchUpStats) error {
	for id, hc := range held.Convs {
		for _, g := range hc.Gaps {
			after := g[0] - 1
			for after < g[1] {
				p, n, decoded, err := c.pageAfter(ctx, id, after, g[1]+1, hc.Epoch, o.PageLimit, o.pageBytes(st))
				if err != nil {
					return err
				}
				st.PageResponses++
				st.saw(n, decoded)
				before := after
				for i := range p.Messages {
					held.store(&p.Messages[i], cmp.Or(p.Epoch, hc.Epoch))
					after = max(after, p.Messages[i].Seq)
				}
				if p.Incomplete {
					st.Incomplete++
				}
				if len(p.Messages) == 0 || !p.HasMore {
					break
				}
				if after == before {
					return fmt.Errorf("page %s after %d: has_more but no message above it", id, before)
				}
			}
		}
		hc.Gaps = nil
	}
	return nil
}

// pageBytes is the budget of the next gap page.
func (o CatchUpOptions) pageBytes(st *CatchUpStats) int {
	if o.PageBytes > 0 {
		return o.PageBytes
	}
	b := o.PageWireBytes
	if st.TotalBytes > 0 {
		b = int(float64(o.PageWireBytes) * float64(st.DecodedBytes) / float64(st.TotalBytes))
	}
	return min(max(b, MinPageBytes), MaxPageBytes)
}
