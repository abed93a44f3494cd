package api

import (
	"context"
	"encoding/json"
	"fmt"
	"github.com/offlinebox/offlinebox/wire"
	"math"
	"net/http"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/offlinebox/offlinebox/schemas"
)

func TestSentMessagesGoThroughThePipelineAsTheAuthenticatedUser(t *testing.T) {
	e := newEnv(t, envOptions{})
	e.runPipeline()
	ann, bob, carol := e.token("ann", ""), e.token("bob", "bob-phone"), e.token("carol", "")
	e.callOK(http.StatusAccepted, "POST", "/v1/messages", ann, map[string]any{
		"client_msg_id": "create", "conv_id": "team", "conv_type": "group", "kind": "member_join", "recipients": []string{"ann", "bob"}}, nil)
	var sent wire.SendAnswer
	e.callOK(http.StatusAccepted, "POST", "/v1/messages", ann, map[string]any{
		"client_msg_id": "hello", "conv_id": "team", "conv_type": "group", "body": []byte("hi @bob"),
		"content_type": "text/plain", "mentions": []string{"bob"}}, &sent)
	if sent.ClientMsgID != "hello" || sent.ConvID != "team" {
		t.Fatalf("answer %+v", sent)
	}
	var r tSync
	eventually(t, "bob is mentioned", func() (bool, string) {
		e.callOK(http.StatusOK, "POST", "/v1/sync", bob, map[string]any{}, &r)
		_, all := r.mentionsOf("bob")
		return all["team:2"], fmt.Sprintf("%+v", r)
	})
	// The mention comes in the conversation's slice (the lane does not
	// repeat what a slice carries).
	var m messageJSON
	for _, c := range r.Conversations {
		for _, cm := range c.Messages {
			if c.ConvID == "team" && cm.Seq == 2 {
				m = cm
			}
		}
	}
	if len(r.Mentions) != 0 || m.Sender != "ann" || string(m.Body) != "hi @bob" || m.Seq != 2 {
		t.Fatalf("bob got %+v", m)
	}
	// A resend of the same message does not make a second one.
	e.callOK(http.StatusAccepted, "POST", "/v1/messages", ann, map[string]any{
		"client_msg_id": "hello", "conv_id": "team", "conv_type": "group", "body": []byte("hi @bob"),
		"content_type": "text/plain", "mentions": []string{"bob"}}, nil)
	e.callOK(http.StatusAccepted, "POST", "/v1/messages", bob, map[string]any{
		"client_msg_id": "reply", "conv_id": "team", "conv_type": "group", "body": []byte("yes?")}, nil)
	eventually(t, "the reply is sequenced", func() (bool, string) {
		var p tPage
		e.callOK(http.StatusOK, "GET", "/v1/conversations/team/messages?after=0", ann, nil, &p)
		return p.MaxSeq == 3, fmt.Sprintf("%+v", p)
	})
	if code, data := e.call("POST", "/v1/messages", carol, map[string]any{
		"client_msg_id": "x", "conv_id": "team", "conv_type": "group", "body": []byte("let me in")}); code != http.StatusForbidden {
		t.Fatalf("a stranger posted to the group: %d %s", code, data)
	}
	if code, data := e.call("POST", "/v1/messages", carol, map[string]any{
		"client_msg_id": "x", "conv_id": "team", "conv_type": "direct", "recipients": []string{"ann"}}); code != http.StatusBadRequest {
		t.Fatalf("a direct message into a group: %d %s", code, data)
	}
}

// memHistory is a history store holding the messages it was given, one
// timeline that every epoch reads; two different epochs share no seq.
type memHistory []*schemas.Sequenced

func (h memHistory) History(_ context.Context, conv string, epoch, before uint64, limit int) ([]*schemas.Sequenced, bool, error) {
	var below []*schemas.Sequenced
	for _, m := range h {
		if m.GetMessage().GetConvId() == conv && (before == 0 || m.Seq < before) {
			c := proto.Clone(m).(*schemas.Sequenced)
			c.Epoch = epoch
			below = append(below, c)
		}
	}
	if len(below) > limit {
		return below[len(below)-limit:], true, nil
	}
	return below, false, nil
}

func (h memHistory) SharedSeq(_ context.Context, _ string, a, b uint64) (uint64, error) {
	if a == b {
		return math.MaxUint64, nil
	}
	return 0, nil
}

func TestHistoryIsForMembersFromWhenTheyJoined(t *testing.T) {
	var h memHistory
	for seq := uint64(1); seq <= 9; seq++ {
		h = append(h, &schemas.Sequenced{Seq: seq, Epoch: 1, Message: textMsg("g", fmt.Sprint("m", seq), "bob")})
	}
	e := newEnv(t, envOptions{history: h})
	smallGroup(t, e)
	// Dan joins at seq 5 and sees only what came after.
	e.produce(&schemas.Message{ClientMsgId: "dan-in", ConvId: "g", ConvType: schemas.ConvType_CONV_TYPE_GROUP,
		Sender: "bob", Kind: schemas.Kind_KIND_MEMBER_JOIN, Recipients: []string{"dan"}})
	dan := e.token("dan", "")
	eventually(t, "dan joined", func() (bool, string) {
		code, data := e.call("GET", "/v1/conversations/g/history?before=9&limit=3", dan, nil)
		return code == http.StatusOK, string(data)
	})
	var p struct {
		HasMore  bool          `json:"has_more"`
		Messages []messageJSON `json:"messages"`
	}
	e.callOK(http.StatusOK, "GET", "/v1/conversations/g/history?before=9&limit=3", dan, nil, &p)
	if len(p.Messages) != 3 || p.Messages[0].Seq != 6 || p.HasMore {
		t.Fatalf("dan's first page (nothing older is his): %+v", p)
	}
	e.callOK(http.StatusOK, "GET", "/v1/conversations/g/history?before=6&limit=3", dan, nil, &p)
	if len(p.Messages) != 0 || p.HasMore {
		t.Fatalf("dan reads from before he joined: %+v", p)
	}
	e.callOK(http.StatusOK, "GET", "/v1/conversations/g/history?before=6&limit=10", e.token("ann", ""), nil, &p)
	if len(p.Messages) != 5 {
		t.Fatalf("ann (founder) reads %d of the 5 messages below 6", len(p.Messages))
	}
	if code, _ := e.call("GET", "/v1/conversations/g/history", e.token("eve", ""), nil); code != http.StatusForbidden {
		t.Fatalf("a stranger read history: %d", code)
	}

	bare := newEnv(t, envOptions{})
	if code, _ := bare.call("GET", "/v1/conversations/g/history", bare.token("ann", ""), nil); code != http.StatusNotImplemented {
		t.Fatalf("no history store: %d, want 501", code)
	}
}

func TestASendTakesTextAsTheAnswersGiveItAndRefusesBothBodyAndText(t *testing.T) {
	e := newEnv(t, envOptions{})
	e.runPipeline()
	ann := e.token("ann", "")
	refused := []struct {
		name string
		body map[string]any
	}{
		{"both body and text", map[string]any{"body": []byte("a"), "text": "a"}},
		{"text under a type that is not text", map[string]any{"text": "a", "content_type": "image/png"}},
	}
	for _, c := range refused {
		c.body["client_msg_id"], c.body["conv_id"], c.body["conv_type"], c.body["recipients"] = "bad", "pair", "direct", []string{"bob"}
		if code, data := e.call("POST", "/v1/messages", ann, c.body); code != http.StatusBadRequest || !strings.Contains(string(data), `"field":"text"`) {
			t.Errorf("%s: %d %s, want 400 naming text", c.name, code, data)
		}
	}
	e.callOK(http.StatusAccepted, "POST", "/v1/messages", ann, map[string]any{
		"client_msg_id": "hi", "conv_id": "pair", "conv_type": "direct", "recipients": []string{"bob"}, "text": "héllo ✓"}, nil)
	var p struct {
		Messages []struct {
			ClientMsgID string  `json:"client_msg_id"`
			Text        *string `json:"text"`
			ContentType string  `json:"content_type"`
		} `json:"messages"`
	}
	eventually(t, "the text message is sequenced", func() (bool, string) {
		code, data := e.call("GET", "/v1/conversations/pair/messages?after=0", ann, nil)
		if code != http.StatusOK || json.Unmarshal(data, &p) != nil {
			return false, string(data)
		}
		return len(p.Messages) > 0 && p.Messages[len(p.Messages)-1].ClientMsgID == "hi", fmt.Sprintf("%+v", p)
	})
	if m := p.Messages[len(p.Messages)-1]; m.Text == nil || *m.Text != "héllo ✓" || m.ContentType != "" {
		t.Errorf("the answer gives %+v, want text %q as text/plain", m, "héllo ✓")
	}
}
