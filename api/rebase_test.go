package api

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"testing"

	"github.com/offlinebox/offlinebox/redisstore"
	"github.com/offlinebox/offlinebox/schemas"
)

// A rebase means the cursor is meaningless (another epoch, beyond the
// counter); a cursor that is only far behind is continued with a gap
// from it, incomplete when part of the gap left the Redis window.
func TestSyncRebasesMeaninglessCursorsAndGivesTheFarBehindAGapFromTheirCursor(t *testing.T) {
	e := newEnv(t, envOptions{})
	e.runPipeline()
	msgs := []*schemas.Message{founding("g", "bob", "ann")}
	for i := range 60 {
		msgs = append(msgs, textMsg("g", fmt.Sprint("m", i), "bob"))
	}
	e.produce(msgs...)
	ann := e.token("ann", "phone")
	eventually(t, "g delivered", func() (bool, string) {
		code, data := e.call("GET", "/v1/conversations/g/messages?limit=1", ann, nil)
		var p tPage
		return code == http.StatusOK && json.Unmarshal(data, &p) == nil && p.MaxSeq == 61, string(data)
	})
	epoch := e.epochOf(t, "ann", "g")
	sync := func(cur map[string]any) tSyncConv {
		t.Helper()
		var r tSync
		e.callOK(http.StatusOK, "POST", "/v1/sync", ann, map[string]any{"limit": 10, "cursors": map[string]any{"g": cur}}, &r)
		if len(r.Conversations) != 1 {
			t.Fatalf("want g alone: %+v", r)
		}
		c := r.Conversations[0]
		if len(c.Messages) != 10 || c.Messages[9].Seq != 61 {
			t.Fatalf("want the newest 10 of g: %+v", c)
		}
		return c
	}
	cases := []struct {
		name       string
		cur        map[string]any
		reason     string
		incomplete bool
	}{
		{"behind", map[string]any{"seq": 40, "epoch": epoch}, "", false},
		{"far behind", map[string]any{"seq": 2, "epoch": epoch}, "", false},
		{"of another epoch", map[string]any{"seq": 55, "epoch": epoch + 1}, "epoch", false},
		{"ahead of the conversation", map[string]any{"seq": 90, "epoch": epoch}, "ahead", false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := sync(tc.cur)
			if c.RebaseReason != tc.reason || c.Rebase != (tc.reason != "") || c.Incomplete != tc.incomplete {
				t.Fatalf("got rebase %q incomplete %v, want %q %v", c.RebaseReason, c.Incomplete, tc.reason, tc.incomplete)
			}
			if (c.Gap != nil) != (tc.reason == "") {
				t.Fatalf("gap %+v on rebase %q", c.Gap, c.RebaseReason)
			}
			if c.Gap != nil && (c.Gap.From != uint64(tc.cur["seq"].(int))+1 || c.Gap.To != 51) {
				t.Fatalf("gap %+v, want from the cursor's next seq to 51", c.Gap)
			}
			if c.Gap != nil {
				// The gap pages as it is named: from and to, inclusive.
				var p tPage
				e.callOK(http.StatusOK, "GET", fmt.Sprintf("/v1/conversations/g/messages?from=%d&to=%d&limit=200", c.Gap.From, c.Gap.To), ann, nil, &p)
				if len(p.Messages) != int(c.Gap.To-c.Gap.From+1) || p.Messages[0].Seq != c.Gap.From ||
					p.Messages[len(p.Messages)-1].Seq != c.Gap.To || p.HasMore {
					t.Fatalf("page of gap %+v: %d messages, has_more %v", c.Gap, len(p.Messages), p.HasMore)
				}
			}
		})
	}
	t.Run("older than the window", func(t *testing.T) {
		popTimelineHead(t, e.store, "g", 45)
		c := sync(map[string]any{"seq": 40, "epoch": epoch})
		if c.Rebase || !c.Incomplete || c.Gap == nil || c.Gap.From != 41 || c.Gap.To != 51 {
			t.Fatalf("got rebase %q incomplete %v gap %+v, want no rebase, incomplete and the gap 41..51", c.RebaseReason, c.Incomplete, c.Gap)
		}
		var p tPage
		e.callOK(http.StatusOK, "GET", "/v1/conversations/g/messages?after=40&limit=5", ann, nil, &p)
		if !p.Incomplete || p.FirstSeq != 46 || len(p.Messages) != 5 || p.Messages[0].Seq != 46 {
			t.Fatalf("page from before the window: %+v", p)
		}
	})
}

// popTimelineHead drops the oldest n entries as expiry does.
func popTimelineHead(t *testing.T, s *redisstore.Store, conv string, n int) {
	t.Helper()
	ctx := context.Background()
	k := s.Keys()
	if err := s.Client().LPopCount(ctx, k.Timeline(conv), n).Err(); err != nil {
		t.Fatal(err)
	}
	if err := s.Client().HIncrBy(ctx, k.ConvMeta(conv), "first", int64(n)).Err(); err != nil {
		t.Fatal(err)
	}
}

func TestTheAPIFollowsAUserMovedToTheHotStore(t *testing.T) {
	e := newEnv(t, envOptions{hot: true})
	smallGroup(t, e)
	// The API's router has loaded the hot set; another process moves ann.
	if err := e.router.Refresh(context.Background(), true); err != nil {
		t.Fatal(err)
	}
	if err := redisstore.NewInboxRouter(e.store, e.hot, 0).MoveToHot(context.Background(), "ann"); err != nil {
		t.Fatal(err)
	}
	ann := e.token("ann", "phone")
	var r tSync
	e.callOK(http.StatusOK, "POST", "/v1/sync", ann, map[string]any{}, &r)
	if len(r.Conversations) != 1 || len(r.Conversations[0].Messages) != 4 {
		t.Fatalf("sync of a moved user: %+v", r)
	}
	e.callOK(http.StatusOK, "POST", "/v1/ack", ann, map[string]any{"acks": []map[string]any{{"conv_id": "g", "seq": 4}}}, nil)
	var l conversationListJSON
	e.callOK(http.StatusOK, "GET", "/v1/conversations", ann, nil, &l)
	if len(l.Conversations) != 1 || l.Conversations[0].AckedSeq != 4 {
		t.Fatalf("list of a moved user: %+v", l)
	}
	if n := e.hot.Client().Exists(context.Background(), e.hot.Keys().Cursor("ann", "phone")).Val(); n != 1 {
		t.Fatal("the ack did not land on the hot store")
	}
}
