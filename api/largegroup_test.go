package api

import (
	"context"
	"fmt"
	"net/http"
	"testing"

	"github.com/offlinebox/offlinebox/schemas"
)

// A user's large groups are known by the inbox field C:t = L alone: no
// per-user set of them is kept. Both ways into a large group are covered:
// a group that grew past the threshold (its members are converted) and one
// that was large from its founding join.
func TestLargeGroupMembersSeeTheGroupWithDerivedUnreadWithoutAPerUserSet(t *testing.T) {
	e := newEnv(t, envOptions{threshold: 4})
	e.runPipeline()
	grown := []*schemas.Message{
		founding("grown", "bob", "ann", "cid"),
		textMsg("grown", "g1", "bob"),
		textMsg("grown", "g2", "cid"),
		{ClientMsgId: "grown-join", ConvId: "grown", ConvType: schemas.ConvType_CONV_TYPE_GROUP, Sender: "bob",
			Kind: schemas.Kind_KIND_MEMBER_JOIN, Recipients: []string{"dan", "eve"}},
		textMsg("grown", "g3", "bob"),
		textMsg("grown", "g4", "cid", mentioning("ann", "dan")),
		textMsg("grown", "g5", "eve"),
	}
	born := []*schemas.Message{
		founding("born", "bob", "ann", "cid", "dan", "eve", "fay"),
		textMsg("born", "b1", "cid", atAll),
		textMsg("born", "b2", "fay"),
	}
	e.produce(append(grown, born...)...)
	ann, dan := e.token("ann", "phone"), e.token("dan", "phone")
	seqOf := map[string]uint64{"grown": uint64(len(grown)), "born": uint64(len(born))}
	eventually(t, "both groups sequenced and listed", func() (bool, string) {
		var l conversationListJSON
		e.callOK(http.StatusOK, "GET", "/v1/conversations", ann, nil, &l)
		for _, c := range l.Conversations {
			if c.LastSeq != seqOf[c.ConvID] {
				return false, fmt.Sprintf("%+v", l)
			}
		}
		return len(l.Conversations) == 2, fmt.Sprintf("%+v", l)
	})

	// unread is every message above what the user has read (their join
	// seq for a joiner); none of these is the user's own, and the join
	// notices (each group's seq 1, grown's seq 4) are no one's unread.
	wantAnn := map[string]conversationJSON{
		"grown": {Unread: seqOf["grown"] - 2, Mentions: 1},
		"born":  {Unread: seqOf["born"] - 1, Mentions: 1},
	}
	checkLargeList(t, e, ann, wantAnn)
	checkLargeList(t, e, dan, map[string]conversationJSON{
		"grown": {Unread: seqOf["grown"] - 4, Mentions: 1},
		"born":  {Unread: seqOf["born"] - 1, Mentions: 1},
	})
	checkLargeSync(t, e, ann, seqOf, wantAnn)

	// A read receipt moves only the read seq; the unread shown follows.
	e.callOK(http.StatusAccepted, "POST", "/v1/read", ann, map[string]any{"receipts": []map[string]any{{"conv_id": "grown", "seq": 5}}}, nil)
	eventually(t, "the read lowers the derived unread", func() (bool, string) {
		var l conversationListJSON
		e.callOK(http.StatusOK, "GET", "/v1/conversations", ann, nil, &l)
		for _, c := range l.Conversations {
			if c.ConvID == "grown" {
				return c.Unread == seqOf["grown"]-5 && c.Mentions == 1, fmt.Sprintf("%+v", c)
			}
		}
		return false, fmt.Sprintf("%+v", l)
	})

	keys, err := e.store.Client().Keys(context.Background(), e.storeCfg.Prefix+"*:lg").Result()
	if err != nil || len(keys) != 0 {
		t.Fatalf("per-user large-group sets written: %v %v", keys, err)
	}
}

// checkLargeList: each large group is listed once, as large, with the
// unread derived from its seq and the mentions pending.
func checkLargeList(t *testing.T, e *env, tok string, want map[string]conversationJSON) {
	t.Helper()
	var l conversationListJSON
	e.callOK(http.StatusOK, "GET", "/v1/conversations", tok, nil, &l)
	if len(l.Conversations) != len(want) {
		t.Fatalf("listed %+v, want %d conversations", l.Conversations, len(want))
	}
	for _, c := range l.Conversations {
		w, ok := want[c.ConvID]
		if !ok || !c.Large || c.Kind != "group" || c.Unread != w.Unread || c.Mentions != w.Mentions || c.Preview == nil {
			t.Errorf("listed %+v, want large with unread %d and %d mentions", c, w.Unread, w.Mentions)
		}
	}
}

// checkLargeSync: sync answers each large group, as large, with its
// derived unread, and puts its pending mention (or @all) first.
func checkLargeSync(t *testing.T, e *env, tok string, seqOf map[string]uint64, want map[string]conversationJSON) {
	t.Helper()
	var r tSync
	e.callOK(http.StatusOK, "POST", "/v1/sync", tok, map[string]any{"device_id": "phone"}, &r)
	// The two mentions (an @all, a personal one) come in the slices, which
	// the lane does not repeat.
	if lane, all := r.mentionsOf("ann"); len(r.Conversations) != len(want) || len(all) != 2 || len(lane) != 0 {
		t.Fatalf("sync answered %+v", r)
	}
	for _, c := range r.Conversations {
		w := want[c.ConvID]
		if !c.Large || c.Unread != w.Unread || c.MaxSeq != seqOf[c.ConvID] || len(c.Messages) == 0 {
			t.Errorf("synced %s large %v unread %d max %d (%d messages), want large, unread %d, max %d",
				c.ConvID, c.Large, c.Unread, c.MaxSeq, len(c.Messages), w.Unread, seqOf[c.ConvID])
		}
	}
}
