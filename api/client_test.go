package api

import (
	"encoding/json"
	"fmt"
	"net/http"
	"testing"
)

// client is a device as a real one behaves: it keeps what it received by
// (conversation, seq), refuses to be given the same message twice, pages
// through every gap it is told of, and acks each page once stored.
type client struct {
	e *env
	// token is pinned to the device.
	token  string
	device string
	// sendCursors: the client sends its cursors; otherwise it relies on
	// the cursors the server keeps from its acks.
	sendCursors bool
	cursors     map[string]cursorJSON
	held        map[string]map[uint64]bool
	epochs      map[string]uint64
	// gaps counts the gaps paged through.
	gaps int
}

func newClient(e *env, user, device string, sendCursors bool) *client {
	return &client{e: e, token: e.token(user, device), device: device, sendCursors: sendCursors,
		cursors: map[string]cursorJSON{}, held: map[string]map[uint64]bool{}, epochs: map[string]uint64{}}
}

func (c *client) syncBody() map[string]any {
	b := map[string]any{"limit": 20}
	if c.sendCursors {
		b["cursors"] = c.cursors
	}
	return b
}

func (c *client) sync(t *testing.T) tSync {
	t.Helper()
	data := c.e.callOK(http.StatusOK, "POST", "/v1/sync", c.token, c.syncBody(), nil)
	if len(data) > DefaultSyncBytes {
		t.Fatalf("sync answer of %d bytes over the budget", len(data))
	}
	return decodeSync(t, data)
}

func decodeSync(t *testing.T, data []byte) tSync {
	t.Helper()
	var r tSync
	if err := json.Unmarshal(data, &r); err != nil {
		t.Fatalf("decode sync answer: %v", err)
	}
	return r
}

// store keeps one page of a conversation: ascending, contiguous, and never
// a message already held.
func (c *client) store(t *testing.T, conv string, epoch uint64, ms []messageJSON) {
	t.Helper()
	if c.held[conv] == nil {
		c.held[conv] = map[uint64]bool{}
	}
	c.epochs[conv] = epoch
	for i, m := range ms {
		if m.ConvID != "" || m.Epoch != 0 || m.ConvType != "" {
			t.Fatalf("a message of the slice of %s repeats what the slice says once: %+v", conv, m)
		}
		if i > 0 && m.Seq != ms[i-1].Seq+1 {
			t.Fatalf("%s page not in seq order: %d after %d", conv, m.Seq, ms[i-1].Seq)
		}
		if c.held[conv][m.Seq] {
			t.Fatalf("%s:%d delivered twice to %s", conv, m.Seq, c.device)
		}
		c.held[conv][m.Seq] = true
	}
	if len(ms) > 0 {
		c.ack(t, conv, ms[len(ms)-1].Seq, epoch)
	}
}

func (c *client) ack(t *testing.T, conv string, seq, epoch uint64) {
	t.Helper()
	var res ackResponse
	c.e.callOK(http.StatusOK, "POST", "/v1/ack", c.token,
		map[string]any{"acks": []map[string]any{{"conv_id": conv, "seq": seq, "epoch": epoch}}}, &res)
	if res.Resync {
		t.Fatalf("%s told to resync while catching up", c.device)
	}
}

// catchUp syncs until nothing is left, paging through every gap.
func (c *client) catchUp(t *testing.T) {
	t.Helper()
	for range 100 {
		r := c.sync(t)
		if len(r.Conversations) == 0 && len(r.Summaries) == 0 && r.Omitted == 0 {
			return
		}
		for _, conv := range r.Conversations {
			if conv.Rebase {
				t.Fatalf("%s rebased (%s) during an ordinary catch-up", conv.ConvID, conv.RebaseReason)
			}
			c.store(t, conv.ConvID, conv.Epoch, conv.Messages)
			if n := len(conv.Messages); n > 0 {
				c.cursors[conv.ConvID] = cursorJSON{Seq: conv.Messages[n-1].Seq, Epoch: conv.Epoch}
			}
			if conv.Gap != nil {
				c.pageGap(t, conv.ConvID, conv.Epoch, *conv.Gap)
			}
		}
	}
	t.Fatalf("%s never caught up", c.device)
}

// pageGap reads the seqs gap.From..gap.To in pages.
func (c *client) pageGap(t *testing.T, conv string, epoch uint64, gap gapJSON) {
	t.Helper()
	c.gaps++
	after := gap.From - 1
	for range 1000 {
		var p tPage
		c.e.callOK(http.StatusOK, "GET", fmt.Sprintf("/v1/conversations/%s/messages?after=%d&before=%d&limit=50&epoch=%d",
			conv, after, gap.To+1, epoch), c.token, nil, &p)
		if len(p.Messages) == 0 {
			t.Fatalf("%s gap %+v: empty page after %d", conv, gap, after)
		}
		if p.Messages[0].Seq != after+1 {
			t.Fatalf("%s gap page starts at %d, want %d", conv, p.Messages[0].Seq, after+1)
		}
		c.store(t, conv, epoch, p.Messages)
		after = p.Messages[len(p.Messages)-1].Seq
		if !p.HasMore {
			if after != gap.To {
				t.Fatalf("%s gap %+v ended at %d", conv, gap, after)
			}
			return
		}
	}
	t.Fatalf("%s gap %+v never ended", conv, gap)
}

// checkHoldsAll: the client holds exactly seqs 1..max of every
// conversation of the story.
func (c *client) checkHoldsAll(t *testing.T, s *story) {
	t.Helper()
	for conv, ms := range s.convs {
		held := c.held[conv]
		if len(held) != len(ms) {
			t.Errorf("%s holds %d messages of %s, want %d", c.device, len(held), conv, len(ms))
			continue
		}
		for seq := uint64(1); seq <= uint64(len(ms)); seq++ {
			if !held[seq] {
				t.Errorf("%s lacks %s:%d", c.device, conv, seq)
			}
		}
	}
}
