package checker

import (
	"fmt"

	"github.com/offlinebox/offlinebox/client"
)

// localStore is a device's own database: what it stored, by conversation
// and position (epoch, seq), and where its sync continues from. It notes every answer that
// breaks the API's promises about order.
type localStore struct {
	convs map[string]*heldConv
	// redelivered counts messages received again that were already
	// stored: allowed (before an ack, and a mention comes twice).
	redelivered int
	// misordered counts slices whose seqs were not ascending and
	// contiguous, and messages received twice with different content.
	misordered int
	problems   []string
}

// Place is where a timeline puts a message: a seq names one message
// forever within an epoch.
type Place struct {
	Conv  string
	Epoch uint64
	Seq   uint64
}

type heldConv struct {
	epoch  uint64
	cursor uint64
	msgs   map[client.Cursor]string // (epoch, seq) → client_msg_id
	gaps   [][2]uint64
	// skipped are the seqs a slice stepped over, inclusive: a user who
	// left and came back is sliced across their spans, nothing between.
	// The account checks that they were owed none of them.
	skipped [][2]uint64
}

func newLocalStore() *localStore { return &localStore{convs: map[string]*heldConv{}} }

func (s *localStore) conv(id string) *heldConv {
	c := s.convs[id]
	if c == nil {
		c = &heldConv{msgs: map[client.Cursor]string{}}
		s.convs[id] = c
	}
	return c
}

func (s *localStore) problem(format string, args ...any) {
	if len(s.problems) < 20 {
		s.problems = append(s.problems, fmt.Sprintf(format, args...))
	}
}

// put stores one message at its (epoch, seq); a position already held
// with another id is a broken promise (a seq names one message forever
// within an epoch). The same seq of another epoch is another position.
func (s *localStore) put(m *client.Message) {
	c := s.conv(m.ConvID)
	at := client.Cursor{Seq: m.Seq, Epoch: m.Epoch}
	if old, ok := c.msgs[at]; ok {
		s.redelivered++
		if old != m.ClientMsgID {
			s.misordered++
			s.problem("%s seq %d of epoch %d was %s, now %s", m.ConvID, m.Seq, m.Epoch, old, m.ClientMsgID)
		}
		return
	}
	c.msgs[at] = m.ClientMsgID
}

// cursors are what a sync request sends.
func (s *localStore) cursors() map[string]client.Cursor {
	out := make(map[string]client.Cursor, len(s.convs))
	for id, c := range s.convs {
		if c.cursor > 0 {
			out[id] = client.Cursor{Seq: c.cursor, Epoch: c.epoch}
		}
	}
	return out
}

// apply stores a sync answer as a client that loses nothing would: the
// mention lane, then each conversation's slice, remembering the gaps it
// was told of. It returns what to ack.
func (s *localStore) apply(resp client.SyncResponse) []client.AckItem {
	for i := range resp.Mentions {
		s.put(&resp.Mentions[i].Message)
	}
	var acks []client.AckItem
	for i := range resp.Conversations {
		sc := &resp.Conversations[i]
		hc := s.conv(sc.ConvID)
		if sc.Rebase && sc.Epoch != hc.epoch && hc.epoch != 0 {
			// Another timeline: what the device holds says nothing of it.
			hc.cursor = 0
		}
		if len(sc.Messages) > 0 {
			first := sc.Messages[0].Seq
			switch {
			case sc.Gap != nil:
				hc.gaps = append(hc.gaps, [2]uint64{sc.Gap.From, sc.Gap.To})
			case sc.Rebase && first > hc.cursor+1:
				// Older than what was given is history to the server; the
				// device still wants it.
				hc.gaps = append(hc.gaps, [2]uint64{hc.cursor + 1, first - 1})
			}
		}
		s.checkSlice(sc)
		for j := range sc.Messages {
			s.put(&sc.Messages[j])
			hc.cursor = max(hc.cursor, sc.Messages[j].Seq)
		}
		hc.epoch = sc.Epoch
		if hc.cursor > 0 {
			acks = append(acks, client.AckItem{ConvID: sc.ConvID, Seq: hc.cursor, Epoch: hc.epoch})
		}
	}
	return acks
}

// checkSlice: a conversation's slice is ascending, never beyond the max
// seq it names, and contiguous but for seqs outside the user's spans
// (noted in skipped, checked by the account).
func (s *localStore) checkSlice(sc *client.SyncConv) {
	hc := s.conv(sc.ConvID)
	for j := range sc.Messages {
		m := &sc.Messages[j]
		if m.ConvID != sc.ConvID || m.Seq > sc.MaxSeq || (j > 0 && m.Seq <= sc.Messages[j-1].Seq) {
			s.misordered++
			s.problem("%s: slice element %d has seq %d (max %d)", sc.ConvID, j, m.Seq, sc.MaxSeq)
		} else if j > 0 && m.Seq > sc.Messages[j-1].Seq+1 {
			hc.skipped = append(hc.skipped, [2]uint64{sc.Messages[j-1].Seq + 1, m.Seq - 1})
		}
	}
}

// putPage stores a page read after `after`; it must continue right there
// unless the window no longer holds it.
func (s *localStore) putPage(conv string, after uint64, p client.Page) uint64 {
	for i := range p.Messages {
		m := &p.Messages[i]
		if !p.Incomplete && m.Seq != after+1 {
			s.misordered++
			s.problem("%s: page after %d holds seq %d", conv, after, m.Seq)
		}
		s.put(m)
		after = max(after, m.Seq)
	}
	return after
}
