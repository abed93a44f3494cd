package api

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/offlinebox/offlinebox/schemas"
)

func seqsOf(ms []messageJSON) []uint64 {
	out := make([]uint64, len(ms))
	for i, m := range ms {
		out[i] = m.Seq
	}
	return out
}

type tListConv struct {
	ConvID string `json:"conv_id"`
	Unread uint64 `json:"unread"`
	Left   bool   `json:"left"`
}

type tHistory struct {
	HasMore  bool          `json:"has_more"`
	Messages []messageJSON `json:"messages"`
}

func (e *env) listed(token, conv string) (tListConv, bool) {
	var l struct {
		Conversations []tListConv `json:"conversations"`
	}
	e.callOK(http.StatusOK, "GET", "/v1/conversations", token, nil, &l)
	for _, c := range l.Conversations {
		if c.ConvID == conv {
			return c, true
		}
	}
	return tListConv{}, false
}

// send posts one message as the token's user.
func (e *env) send(token string, body map[string]any) {
	e.t.Helper()
	e.callOK(http.StatusAccepted, "POST", "/v1/messages", token, body, nil)
}

func groupBody(conv, id string, extra ...any) map[string]any {
	b := map[string]any{"client_msg_id": id, "conv_id": conv, "conv_type": "group", "body": []byte("text of " + id),
		"content_type": "text/plain"}
	for i := 0; i+1 < len(extra); i += 2 {
		b[extra[i].(string)] = extra[i+1]
	}
	return b
}

// histOf is a history store holding seqs 1..n of conv.
func histOf(conv string, n uint64) memHistory {
	var h memHistory
	for seq := uint64(1); seq <= n; seq++ {
		h = append(h, &schemas.Sequenced{Seq: seq, Epoch: 1, Message: textMsg(conv, fmt.Sprint("h", seq), "pa")})
	}
	return h
}

func (e *env) waitMaxSeq(token, conv string, seq uint64) {
	e.t.Helper()
	eventually(e.t, fmt.Sprintf("%s reaches seq %d", conv, seq), func() (bool, string) {
		code, data := e.call("GET", "/v1/conversations/"+conv+"/messages?after=0&limit=1", token, nil)
		var p tPage
		_ = json.Unmarshal(data, &p)
		return code == http.StatusOK && p.MaxSeq == seq, string(data)
	})
}

func TestAFormerMemberReadsAndMarksReadWhatWasMeantForThemAndNothingAfter(t *testing.T) {
	e := newEnv(t, envOptions{history: histOf("p-g", 6)})
	e.runPipeline()
	pa, pb := e.token("pa", "pa-phone"), e.token("pb", "pb-phone")
	e.send(pa, groupBody("p-g", "create", "kind", "member_join", "recipients", []string{"pa", "pb"}))
	for i := range 3 {
		e.send(pa, groupBody("p-g", fmt.Sprint("m", i)))
	}
	e.send(pb, groupBody("p-g", "bye", "kind", "member_leave", "recipients", []string{"pb"}))
	e.send(pa, groupBody("p-g", "after"))
	e.waitMaxSeq(pa, "p-g", 6)
	eventually(t, "pb's inbox holds seqs 1..4", func() (bool, string) {
		c, ok := e.listed(pb, "p-g")
		// seqs 2..4: the founding join is no one's unread
		return ok && c.Unread == 3, fmt.Sprintf("%+v", c)
	})

	var s tSync
	e.callOK(http.StatusOK, "POST", "/v1/sync", pb, map[string]any{}, &s)
	if len(s.Conversations) != 1 || !slices.Equal(seqsOf(s.Conversations[0].Messages), []uint64{1, 2, 3, 4}) ||
		s.Conversations[0].MaxSeq != 4 || !s.Conversations[0].Left {
		t.Fatalf("pb's sync: %+v, want p-g, left, with seqs 1..4 and max seq 4", s)
	}
	var p tPage
	e.callOK(http.StatusOK, "GET", "/v1/conversations/p-g/messages?after=0", pb, nil, &p)
	if !slices.Equal(seqsOf(p.Messages), []uint64{1, 2, 3, 4}) || p.HasMore || p.MaxSeq != 4 {
		t.Fatalf("pb's page: %+v, want seqs 1..4, nothing more", p)
	}
	e.callOK(http.StatusOK, "GET", "/v1/conversations/p-g/messages", pb, nil, &p)
	if !slices.Equal(seqsOf(p.Messages), []uint64{1, 2, 3, 4}) {
		t.Fatalf("pb's newest page: %v, want seqs 1..4", seqsOf(p.Messages))
	}
	var h tHistory
	e.callOK(http.StatusOK, "GET", "/v1/conversations/p-g/history", pb, nil, &h)
	if !slices.Equal(seqsOf(h.Messages), []uint64{1, 2, 3, 4}) || h.HasMore {
		t.Fatalf("pb's history: %+v, want seqs 1..4", h)
	}
	if code, data := e.call("POST", "/v1/read", pb, map[string]any{"receipts": []map[string]any{{"conv_id": "p-g", "seq": 5}}}); code != http.StatusBadRequest {
		t.Fatalf("pb marked read past its leave: %d %s", code, data)
	}
	e.callOK(http.StatusAccepted, "POST", "/v1/read", pb, map[string]any{"receipts": []map[string]any{{"conv_id": "p-g", "seq": 4}}}, nil)
	eventually(t, "pb's unread clears and the list shows it left", func() (bool, string) {
		c, ok := e.listed(pb, "p-g")
		return ok && c.Unread == 0 && c.Left, fmt.Sprintf("%+v", c)
	})
	if c, _ := e.listed(pa, "p-g"); c.Left {
		t.Fatalf("pa, a member, is listed as left: %+v", c)
	}
	if code, _ := e.call("POST", "/v1/messages", pb, groupBody("p-g", "back-door")); code != http.StatusForbidden {
		t.Fatalf("a former member posted: %d", code)
	}
	if code, _ := e.call("GET", "/v1/conversations/p-g/messages?after=0", e.token("eve", ""), nil); code != http.StatusForbidden {
		t.Fatalf("a stranger read the group: %d", code)
	}
}

func TestAMemberWhoLeftAndCameBackReadsEachSpanAndNothingBetween(t *testing.T) {
	e := newEnv(t, envOptions{history: histOf("p-g", 8)})
	e.runPipeline()
	pa, pb := e.token("pa", ""), e.token("pb", "pb-phone")
	e.send(pa, groupBody("p-g", "create", "kind", "member_join", "recipients", []string{"pa", "pb"})) // 1
	e.send(pa, groupBody("p-g", "m2"))
	// The API checks pb's own leave against the membership it reads.
	e.waitMaxSeq(pa, "p-g", 2)
	e.send(pb, groupBody("p-g", "bye", "kind", "member_leave", "recipients", []string{"pb"})) // 3
	e.send(pa, groupBody("p-g", "m4"))
	e.send(pa, groupBody("p-g", "back", "kind", "member_join", "recipients", []string{"pb"})) // 5
	e.send(pa, groupBody("p-g", "m6"))
	// pb is a member again before it leaves again.
	e.waitMaxSeq(pa, "p-g", 6)
	e.send(pb, groupBody("p-g", "bye2", "kind", "member_leave", "recipients", []string{"pb"})) // 7
	e.send(pa, groupBody("p-g", "m8"))
	e.waitMaxSeq(pa, "p-g", 8)

	var p tPage
	e.callOK(http.StatusOK, "GET", "/v1/conversations/p-g/messages?after=0", pb, nil, &p)
	if !slices.Equal(seqsOf(p.Messages), []uint64{1, 2}) || !p.HasMore {
		t.Fatalf("pb's first page: %v (more %v), want the first span 1..2 and more", seqsOf(p.Messages), p.HasMore)
	}
	e.callOK(http.StatusOK, "GET", "/v1/conversations/p-g/messages?after=2", pb, nil, &p)
	if !slices.Equal(seqsOf(p.Messages), []uint64{6}) || p.HasMore {
		t.Fatalf("pb's second page: %v (more %v), want the second span: 6", seqsOf(p.Messages), p.HasMore)
	}
	var h tHistory
	e.callOK(http.StatusOK, "GET", "/v1/conversations/p-g/history", pb, nil, &h)
	if !slices.Equal(seqsOf(h.Messages), []uint64{1, 2, 6}) || h.HasMore {
		t.Fatalf("pb's history: %v (more %v), want 1, 2, 6", seqsOf(h.Messages), h.HasMore)
	}
	e.callOK(http.StatusOK, "GET", "/v1/conversations/p-g/history?before=6", pb, nil, &h)
	if !slices.Equal(seqsOf(h.Messages), []uint64{1, 2}) {
		t.Fatalf("pb's history below 6: %v, want 1, 2", seqsOf(h.Messages))
	}
	// One answer holds every span, nothing between.
	eventually(t, "pb's sync holds its spans", func() (bool, string) {
		var s tSync
		e.callOK(http.StatusOK, "POST", "/v1/sync", pb, map[string]any{}, &s)
		if len(s.Conversations) != 1 {
			return false, fmt.Sprintf("%+v", s)
		}
		var got []uint64
		for _, m := range s.Conversations[0].Messages {
			got = append(got, m.Seq)
		}
		return slices.Equal(got, []uint64{1, 2, 6}) && !s.Conversations[0].HasMore, fmt.Sprintf("%+v", s.Conversations[0])
	})
}

// deadLetters reads the dead-letter topic until it holds n records.
func (e *env) deadLetters(n int) []*kgo.Record {
	e.t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(e.addrs...), kgo.ConsumeTopics(schemas.TopicDeadLetter),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxWait(100*time.Millisecond))
	if err != nil {
		e.t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var out []*kgo.Record
	for len(out) < n {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			e.t.Fatalf("%d dead letters, want %d", len(out), n)
		}
		out = append(out, fs.Records()...)
	}
	return out
}

func header(r *kgo.Record, key string) string {
	for _, h := range r.Headers {
		if h.Key == key {
			return string(h.Value)
		}
	}
	return ""
}

func TestRacingFoundersAndStrangersAreRefusedAndDeadLetteredWithTheirReason(t *testing.T) {
	e := newEnv(t, envOptions{})
	alice, mallory, bob := e.token("alice", ""), e.token("mallory", "m-phone"), e.token("bob", "")
	// Both founding joins pass the API's check: the group does not exist
	// yet for either of them (the pipeline starts after both were sent).
	e.send(alice, groupBody("new-g", "create", "kind", "member_join", "recipients", []string{"alice", "bob"}))
	e.send(mallory, groupBody("new-g", "grab", "kind", "member_join", "recipients", []string{"mallory"}))
	e.send(mallory, groupBody("new-g", "oust", "kind", "member_leave", "recipients", []string{"alice"}))
	e.send(mallory, groupBody("new-g", "peek"))
	e.send(bob, groupBody("new-g", "coup", "kind", "member_leave", "recipients", []string{"alice"}))
	e.send(alice, groupBody("new-g", "secret"))
	e.runPipeline()
	e.waitMaxSeq(alice, "new-g", 2)

	dead := e.deadLetters(4)
	want := map[string]string{
		"grab": "sender: is not a member of the group",
		"oust": "sender: is not a member of the group",
		"peek": "sender: is not a member of the group",
		"coup": "sender: only the owner or an admin removes others",
	}
	for _, r := range dead {
		m, err := schemas.DecodeMessage(r.Value, schemas.Limits{})
		if err != nil {
			t.Fatalf("dead letter does not decode: %v", err)
		}
		if m.GetConvId() != "new-g" || m.GetSender() == "alice" || want[m.GetClientMsgId()] != header(r, schemas.HeaderDeadReason) {
			t.Errorf("dead letter %s of %s by %s: reason %q, want %q", m.GetClientMsgId(), m.GetConvId(), m.GetSender(),
				header(r, schemas.HeaderDeadReason), want[m.GetClientMsgId()])
		}
	}
	if code, _ := e.call("GET", "/v1/conversations/new-g/messages?after=0", mallory, nil); code != http.StatusForbidden {
		t.Fatalf("the stranger reads the group: %d", code)
	}
	var s tSync
	e.callOK(http.StatusOK, "POST", "/v1/sync", mallory, map[string]any{}, &s)
	if len(s.Conversations) != 0 {
		t.Fatalf("the stranger syncs %+v", s.Conversations)
	}
	var p tPage
	e.callOK(http.StatusOK, "GET", "/v1/conversations/new-g/messages?after=0", alice, nil, &p)
	if !slices.Equal(seqsOf(p.Messages), []uint64{1, 2}) {
		t.Fatalf("alice's group holds %v, want her founding join and message only", seqsOf(p.Messages))
	}
}

func TestTheOwnerMakesAnAdminThroughTheAPIAndNoClientSpeaksForTheSystem(t *testing.T) {
	e := newEnv(t, envOptions{})
	e.runPipeline()
	alice, bob := e.token("alice", ""), e.token("bob", "")
	e.send(alice, groupBody("team", "create", "kind", "member_join", "recipients", []string{"alice", "bob"}))
	e.send(alice, groupBody("team", "admin-bob", "kind", "member_join", "recipients", []string{"bob"}, "role", "admin"))
	e.send(bob, groupBody("team", "add-carol", "kind", "member_join", "recipients", []string{"carol"}))
	carol := e.token("carol", "")
	eventually(t, "the admin added carol", func() (bool, string) {
		code, data := e.call("GET", "/v1/conversations/team/messages?after=0", carol, nil)
		return code == http.StatusOK, string(data)
	})
	for _, field := range []string{"authority", "Authority"} {
		code, data := e.call("POST", "/v1/messages", carol, groupBody("team", "smuggle", "kind", "member_join",
			"recipients", []string{"mallory"}, field, "AUTHORITY_SYSTEM"))
		if code != http.StatusBadRequest {
			t.Fatalf("a client set %s: %d %s", field, code, data)
		}
	}
	if code, data := e.call("POST", "/v1/messages", carol, groupBody("team", "r", "role", "boss")); code != http.StatusBadRequest {
		t.Fatalf("an unknown role: %d %s", code, data)
	}
	// carol, a plain member, cannot add through the API either: the
	// record is produced as hers and the sequencing step refuses it.
	e.send(carol, groupBody("team", "add-mallory", "kind", "member_join", "recipients", []string{"mallory"}))
	dead := e.deadLetters(1)
	if m, _ := schemas.DecodeMessage(dead[0].Value, schemas.Limits{}); m.GetClientMsgId() != "add-mallory" ||
		m.GetAuthority() != schemas.Authority_AUTHORITY_SENDER || header(dead[0], schemas.HeaderDeadReason) != "sender: only the owner or an admin adds members" {
		t.Fatalf("dead letter %v reason %q", m, header(dead[0], schemas.HeaderDeadReason))
	}
}

func TestAFormerMemberOfALargeGroupStillFindsWhatWasMeantForThem(t *testing.T) {
	e := newEnv(t, envOptions{threshold: 4})
	e.runPipeline()
	e.produce(
		founding("big", "bob", "ann", "cid", "dan", "eve", "fay"),
		textMsg("big", "b2", "cid"),
		&schemas.Message{ClientMsgId: "ann-out", ConvId: "big", ConvType: schemas.ConvType_CONV_TYPE_GROUP, Sender: "ann",
			Kind: schemas.Kind_KIND_MEMBER_LEAVE, Recipients: []string{"ann"}},
		textMsg("big", "b4", "fay"),
	)
	ann := e.token("ann", "phone")
	e.waitMaxSeq(e.token("bob", ""), "big", 4)
	eventually(t, "ann's list shows the group as left with its unread", func() (bool, string) {
		c, ok := e.listed(ann, "big")
		// b2: the founding join is no one's unread
		return ok && c.Left && c.Unread == 1, fmt.Sprintf("%+v", c)
	})
	var s tSync
	e.callOK(http.StatusOK, "POST", "/v1/sync", ann, map[string]any{}, &s)
	if len(s.Conversations) != 1 || !slices.Equal(seqsOf(s.Conversations[0].Messages), []uint64{1, 2}) {
		t.Fatalf("ann's sync: %+v, want big with seqs 1..2", s)
	}
}
