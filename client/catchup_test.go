package client

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

func TestHeldApplyRecordsGapsRebasesAndAcks(t *testing.T) {
	h := NewHeld()
	h.conv("g").Cursor = 10
	resp := SyncResponse{
		Mentions: []SyncMention{{ConvID: "g", Message: Message{ConvID: "g", Seq: 15, Epoch: 7, ClientMsgID: "m15"}}},
		Conversations: []SyncConv{
			{ConvID: "g", Epoch: 7, Gap: &struct {
				From uint64 `json:"from"`
				To   uint64 `json:"to"`
			}{11, 19}, Messages: []Message{{ConvID: "g", Seq: 20}, {ConvID: "g", Seq: 21}}},
			{ConvID: "big", Epoch: 3, Rebase: true, Messages: []Message{{ConvID: "big", Seq: 500}}},
			{ConvID: "g2", Epoch: 1, Messages: []Message{{ConvID: "g2", Seq: 1}}},
		},
	}
	acks := h.Apply(resp)
	want := map[string]uint64{"g": 21, "big": 500, "g2": 1}
	if len(acks) != len(want) {
		t.Fatalf("acks %v, want one per conversation %v", acks, want)
	}
	for _, a := range acks {
		if want[a.ConvID] != a.Seq {
			t.Errorf("ack %s at %d, want %d", a.ConvID, a.Seq, want[a.ConvID])
		}
	}
	if g := h.Convs["g"].Gaps; len(g) != 1 || g[0] != [2]uint64{11, 19} {
		t.Errorf("gaps of g = %v, want [[11 19]]", g)
	}
	if g := h.Convs["big"].Gaps; len(g) != 1 || g[0] != [2]uint64{1, 499} {
		t.Errorf("gaps of the rebased conversation = %v, want [[1 499]]", g)
	}
	if len(h.Convs["g2"].Gaps) != 0 {
		t.Errorf("a conversation given from its start has gaps %v", h.Convs["g2"].Gaps)
	}
	h.Apply(SyncResponse{Conversations: []SyncConv{{ConvID: "g", Epoch: 7, Messages: []Message{{ConvID: "g", Seq: 15}}}}})
	if h.Redelivered != 1 {
		t.Errorf("redelivered %d, want 1 (seq 15 came in the mention lane first)", h.Redelivered)
	}
}

// msgs are messages of conv with seqs from..to.
func msgs(conv string, from, to uint64) []Message {
	var out []Message
	for s := from; s <= to; s++ {
		out = append(out, Message{ConvID: conv, Seq: s})
	}
	return out
}

func gapOf(from, to uint64) *struct {
	From uint64 `json:"from"`
	To   uint64 `json:"to"`
} {
	return &struct {
		From uint64 `json:"from"`
		To   uint64 `json:"to"`
	}{from, to}
}

func TestHeldApplyNeverRecordsAGapOverSeqsItHolds(t *testing.T) {
	tests := []struct {
		name  string
		held  []Message // stored before the answer
		epoch uint64    // of what is held
		conv  SyncConv
		want  [][2]uint64
	}{
		{name: "a gap the answer's own slice covers is dropped",
			epoch: 7, held: msgs("g", 1, 79),
			conv: SyncConv{ConvID: "g", Epoch: 7, Gap: gapOf(80, 194), Messages: msgs("g", 80, 214)}},
		{name: "a gap reaching into the slice keeps only what precedes it",
			epoch: 7, held: msgs("g", 1, 79),
			conv: SyncConv{ConvID: "g", Epoch: 7, Gap: gapOf(80, 194), Messages: msgs("g", 150, 214)},
			want: [][2]uint64{{80, 149}}},
		{name: "held seqs at both ends of a gap are trimmed",
			epoch: 7, held: append(msgs("g", 1, 30), msgs("g", 36, 50)...),
			conv: SyncConv{ConvID: "g", Epoch: 7, Gap: gapOf(21, 50), Messages: msgs("g", 51, 60)},
			want: [][2]uint64{{31, 35}}},
		{name: "a held seq inside a gap does not split it",
			epoch: 7, held: append(msgs("g", 1, 10), msgs("g", 15, 15)...),
			conv: SyncConv{ConvID: "g", Epoch: 7, Gap: gapOf(11, 19), Messages: msgs("g", 20, 21)},
			want: [][2]uint64{{11, 19}}},
		{name: "seqs held of another epoch name other messages",
			epoch: 3, held: msgs("g", 1, 40),
			conv: SyncConv{ConvID: "g", Epoch: 7, Rebase: true, RebaseReason: "epoch", Messages: msgs("g", 41, 42)},
			want: [][2]uint64{{1, 40}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := NewHeld()
			h.Apply(SyncResponse{Conversations: []SyncConv{{ConvID: "g", Epoch: tt.epoch, Messages: tt.held}}})
			h.Convs["g"].Gaps = nil
			if tt.conv.Rebase {
				h.Convs["g"].Cursor = 0 // the device drops its cursor of the old epoch
			}
			h.Apply(SyncResponse{Conversations: []SyncConv{tt.conv}})
			got := h.Convs["g"].Gaps
			if len(got) != len(tt.want) {
				t.Fatalf("gaps %v, want %v", got, tt.want)
			}
			for i := range got {
				if got[i] != tt.want[i] {
					t.Errorf("gaps %v, want %v", got, tt.want)
				}
			}
		})
	}
}

// A rebuilt timeline may restart below what the device held (ClickHouse
// lagged): the answer's epoch is new and its slice ends below the old
// cursor. The device must continue from the slice, or it acks a seq the
// new timeline has not reached and later skips the messages that take it.
func TestHeldApplyRestartsTheCursorFromARebasedSlice(t *testing.T) {
	tests := []struct {
		name      string
		conv      SyncConv
		wantSeq   uint64
		wantEpoch uint64
	}{
		{"new epoch below the old cursor", SyncConv{ConvID: "g", Epoch: 9, MaxSeq: 90, Rebase: true,
			RebaseReason: "epoch", Messages: msgs("g", 81, 90)}, 90, 9},
		{"cursor ahead of the counter", SyncConv{ConvID: "g", Epoch: 7, MaxSeq: 95, Rebase: true,
			RebaseReason: "ahead", Messages: msgs("g", 86, 95)}, 95, 7},
		{"backlog rebase above the cursor", SyncConv{ConvID: "g", Epoch: 7, MaxSeq: 900, Rebase: true,
			RebaseReason: "backlog", Messages: msgs("g", 801, 900)}, 900, 7},
		{"new epoch with nothing above the join", SyncConv{ConvID: "g", Epoch: 9, MaxSeq: 40, Rebase: true,
			RebaseReason: "epoch"}, 40, 9},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := NewHeld()
			h.Apply(SyncResponse{Conversations: []SyncConv{{ConvID: "g", Epoch: 7, MaxSeq: 100, Messages: msgs("g", 91, 100)}}})
			acks := h.Apply(SyncResponse{Conversations: []SyncConv{tt.conv}})
			if len(acks) != 1 || acks[0].Seq != tt.wantSeq || acks[0].Epoch != tt.wantEpoch {
				t.Errorf("acks %+v, want g at seq %d epoch %d", acks, tt.wantSeq, tt.wantEpoch)
			}
			if c := h.Cursors()["g"]; c.Seq != tt.wantSeq || c.Epoch != tt.wantEpoch {
				t.Errorf("next sync sends cursor %+v, want seq %d epoch %d", c, tt.wantSeq, tt.wantEpoch)
			}
		})
	}
}

// A server that answers has_more with a page that does not move past the
// cursor must not keep the client paging forever.
func TestPageGapsStopsWhenTheServerDoesNotAdvance(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"conv_id":"g","epoch":1,"has_more":true,"messages":[{"conv_id":"g","seq":3,"epoch":1}]}`))
	}))
	defer srv.Close()
	held := NewHeld()
	hc := held.conv("g")
	hc.Epoch, hc.Cursor, hc.Gaps = 1, 10, [][2]uint64{{4, 9}}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var st CatchUpStats
	err := New(srv.URL, "t", nil).pageGaps(ctx, held, CatchUpOptions{PageLimit: 200}, &st)
	if err == nil || ctx.Err() != nil {
		t.Fatalf("want an error saying the server did not advance, got %v after %d pages", err, st.PageResponses)
	}
}

// After a rebuild the new epoch's seqs 41 and 42 are new messages,
// although the device holds seqs 41..45 of the old epoch: they are
// stored beside them, not counted as redelivered, and a real redelivery
// of the new epoch is still one.
func TestHeldKeysMessagesByEpochAndSeq(t *testing.T) {
	const oldE, newE = 7, 9
	at := func(epoch, seq uint64, id string) Message {
		return Message{ConvID: "g", Seq: seq, Epoch: epoch, ClientMsgID: id}
	}
	h := NewHeld()
	var old []Message
	for s := uint64(1); s <= 45; s++ {
		old = append(old, at(oldE, s, fmt.Sprint("old", s)))
	}
	h.Apply(SyncResponse{Conversations: []SyncConv{{ConvID: "g", Epoch: oldE, MaxSeq: 45, Messages: old}}})
	acks := h.Apply(SyncResponse{
		Mentions: []SyncMention{{ConvID: "g", Message: at(newE, 41, "new41")}},
		Conversations: []SyncConv{{ConvID: "g", Epoch: newE, MaxSeq: 42, Rebase: true, RebaseReason: "epoch",
			Messages: []Message{at(newE, 41, "new41"), at(newE, 42, "new42")}}},
	})
	hc := h.Convs["g"]
	if h.Redelivered != 1 {
		t.Fatalf("redelivered %d, want 1 (the mention, again in the slice)", h.Redelivered)
	}
	if len(hc.Msgs) != 47 {
		t.Fatalf("holds %d messages, want the old 45 and the new 2", len(hc.Msgs))
	}
	for pos, want := range map[Cursor]string{
		{Seq: 41, Epoch: oldE}: "old41", {Seq: 45, Epoch: oldE}: "old45",
		{Seq: 41, Epoch: newE}: "new41", {Seq: 42, Epoch: newE}: "new42",
	} {
		if got := hc.Msgs[pos].ClientMsgID; got != want {
			t.Errorf("held at %+v: %q, want %q", pos, got, want)
		}
	}
	if len(acks) != 1 || acks[0] != (AckItem{ConvID: "g", Seq: 42, Epoch: newE}) {
		t.Fatalf("acks %+v, want g at 42 of the new epoch", acks)
	}
	h.Apply(SyncResponse{Conversations: []SyncConv{{ConvID: "g", Epoch: newE, MaxSeq: 42, Messages: []Message{at(newE, 42, "new42")}}}})
	if h.Redelivered != 2 || len(hc.Msgs) != 47 {
		t.Fatalf("redelivered %d with %d held, want 2 with 47 (new 42 came again)", h.Redelivered, len(hc.Msgs))
	}
}
