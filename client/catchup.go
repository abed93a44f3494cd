package client

import (
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
	Epoch uint64
	// Cursor is the highest seq held at the top: what sync continues from.
	Cursor uint64
	Msgs   map[uint64]HeldMsg
	// Gaps are known missing seq ranges below Cursor, to page through.
	Gaps [][2]uint64
}

// Held is the device's local store.
type Held struct {
	Convs map[string]*HeldConv
	// Redelivered counts messages received again that were already held
	// (a mention in the lane and again in its conversation's slice).
	Redelivered int
}

// NewHeld is an empty device store.
func NewHeld() *Held { return &Held{Convs: map[string]*HeldConv{}} }

func (h *Held) conv(id string) *HeldConv {
	c := h.Convs[id]
	if c == nil {
		c = &HeldConv{Msgs: map[uint64]HeldMsg{}}
		h.Convs[id] = c
	}
	return c
}

// store keeps m; it reports whether it was new.
func (h *Held) store(m *Message) bool {
	c := h.conv(m.ConvID)
	if _, ok := c.Msgs[m.Seq]; ok {
		h.Redelivered++
		return false
	}
	c.Msgs[m.Seq] = HeldMsg{ClientMsgID: m.ClientMsgID, Kind: m.Kind}
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
	// PageLimit of each gap page (200 when 0).
	PageLimit int
	// SyncOnly stops after the syncs, leaving gaps unpaged.
	SyncOnly bool
	// MaxRounds bounds the syncs (10,000 when 0).
	MaxRounds int
}

// CatchUpStats describe one catch-up.
type CatchUpStats struct {
	SyncResponses int
	PageResponses int
	FirstBytes    int
	MaxBytes      int
	TotalBytes    int64
	// First is the first sync answer, FirstLatency its time.
	First        SyncResponse
	FirstLatency time.Duration
	Duration     time.Duration
	// Incomplete counts gap ranges the window no longer held.
	Incomplete int
}

func (s *CatchUpStats) saw(n int) {
	s.TotalBytes += int64(n)
	s.MaxBytes = max(s.MaxBytes, n)
}

// CatchUp syncs, stores and acks until the server has nothing new, then
// pages through every gap it was told of, as a client that loses nothing
// would.
func (c *Client) CatchUp(ctx context.Context, held *Held, o CatchUpOptions) (CatchUpStats, error) {
	if o.PageLimit == 0 {
		o.PageLimit = 200
	}
	if o.MaxRounds == 0 {
		o.MaxRounds = 10000
	}
	var st CatchUpStats
	start := time.Now()
	for round := 0; ; round++ {
		if round == o.MaxRounds {
			return st, fmt.Errorf("catch-up: not done after %d syncs", round)
		}
		t0 := time.Now()
		resp, n, err := c.Sync(ctx, SyncRequest{Cursors: held.Cursors(), Limit: o.Limit, MaxBytes: o.MaxBytes})
		if err != nil {
			return st, err
		}
		if round == 0 {
			st.First, st.FirstBytes, st.FirstLatency = resp, n, time.Since(t0)
		}
		st.SyncResponses++
		st.saw(n)
		if len(resp.Conversations) == 0 && len(resp.Summaries) == 0 && resp.Omitted == 0 {
			break
		}
		if err := c.Ack(ctx, held.Apply(resp)); err != nil {
			return st, err
		}
	}
	if !o.SyncOnly {
		if err := c.pageGaps(ctx, held, o, &st); err != nil {
			return st, err
		}
	}
	st.Duration = time.Since(start)
	return st, nil
}

// Apply stores one sync answer and returns what to ack.
func (h *Held) Apply(resp SyncResponse) []AckItem {
	for i := range resp.Mentions {
		h.store(&resp.Mentions[i].Message)
	}
	var acks []AckItem
	for i := range resp.Conversations {
		sc := &resp.Conversations[i]
		hc := h.conv(sc.ConvID)
		if len(sc.Messages) > 0 {
			first := sc.Messages[0].Seq
			switch {
			case sc.Gap != nil:
				hc.Gaps = append(hc.Gaps, [2]uint64{sc.Gap.From, sc.Gap.To})
			case sc.Rebase && first > hc.Cursor+1:
				// Older than what was given is "history" to the server;
				// the client still wants it.
				hc.Gaps = append(hc.Gaps, [2]uint64{hc.Cursor + 1, first - 1})
			}
		}
		for j := range sc.Messages {
			h.store(&sc.Messages[j])
			hc.Cursor = max(hc.Cursor, sc.Messages[j].Seq)
		}
		hc.Epoch = sc.Epoch
		if hc.Cursor > 0 {
			acks = append(acks, AckItem{ConvID: sc.ConvID, Seq: hc.Cursor, Epoch: hc.Epoch})
		}
	}
	return acks
}

// pageGaps reads every known gap, oldest first, page by page.
func (c *Client) pageGaps(ctx context.Context, held *Held, o CatchUpOptions, st *CatchUpStats) error {
	for id, hc := range held.Convs {
		for _, g := range hc.Gaps {
			after := g[0] - 1
			for after < g[1] {
				p, n, err := c.PageAfter(ctx, id, after, g[1]+1, hc.Epoch, o.PageLimit)
				if err != nil {
					return err
				}
				st.PageResponses++
				st.saw(n)
				for i := range p.Messages {
					held.store(&p.Messages[i])
					after = max(after, p.Messages[i].Seq)
				}
				if p.Incomplete {
					st.Incomplete++
				}
				if len(p.Messages) == 0 || !p.HasMore {
					break
				}
			}
		}
		hc.Gaps = nil
	}
	return nil
}
