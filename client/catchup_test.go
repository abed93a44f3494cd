package client

import "testing"

func TestHeldApplyRecordsGapsRebasesAndAcks(t *testing.T) {
	h := NewHeld()
	h.conv("g").Cursor = 10
	resp := SyncResponse{
		Mentions: []SyncMention{{ConvID: "g", Message: Message{ConvID: "g", Seq: 15, ClientMsgID: "m15"}}},
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
