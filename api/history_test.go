package api

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/offlinebox/offlinebox/schemas"
)

func TestHistoryIsReadInTheEpochAskedAndAnotherTimelineOnlyByEarlierMembers(t *testing.T) {
	var h memHistory
	for seq := uint64(1); seq <= 6; seq++ {
		h = append(h, &schemas.Sequenced{Seq: seq, Message: textMsg("g", fmt.Sprint("m", seq), "bob")})
	}
	e := newEnv(t, envOptions{history: h})
	smallGroup(t, e)
	e.produce(&schemas.Message{ClientMsgId: "dan-in", ConvId: "g", ConvType: schemas.ConvType_CONV_TYPE_GROUP,
		Sender: "bob", Kind: schemas.Kind_KIND_MEMBER_JOIN, Recipients: []string{"dan"}})
	ann, dan := e.token("ann", ""), e.token("dan", "")
	eventually(t, "dan joined", func() (bool, string) {
		code, data := e.call("GET", "/v1/conversations/g/history", dan, nil)
		return code == http.StatusOK, string(data)
	})
	var cur struct {
		Epoch uint64 `json:"epoch"`
	}
	e.callOK(http.StatusOK, "GET", "/v1/conversations/g/messages?after=0", ann, nil, &cur)
	type page struct {
		Epoch    uint64        `json:"epoch"`
		HasMore  bool          `json:"has_more"`
		Messages []messageJSON `json:"messages"`
	}
	older := cur.Epoch - 1 // an epoch that shares no seq with the current one (memHistory)
	tests := []struct {
		name      string
		user      string
		query     string
		wantEpoch uint64
		wantSeqs  int
	}{
		{"no epoch named: the current one", ann, "", cur.Epoch, 6},
		{"the current epoch named", ann, fmt.Sprintf("&epoch=%d", cur.Epoch), cur.Epoch, 6},
		{"an older epoch, to a founder", ann, fmt.Sprintf("&epoch=%d", older), older, 6},
		{"an older epoch, to a member who joined after it parted", dan, fmt.Sprintf("&epoch=%d", older), older, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var p page
			e.callOK(http.StatusOK, "GET", "/v1/conversations/g/history?limit=50"+tt.query, tt.user, nil, &p)
			if p.Epoch != tt.wantEpoch || len(p.Messages) != tt.wantSeqs || p.HasMore {
				t.Fatalf("page = epoch %d, %d messages, has_more %v; want epoch %d, %d messages", p.Epoch, len(p.Messages), p.HasMore, tt.wantEpoch, tt.wantSeqs)
			}
			for _, m := range p.Messages {
				if m.Epoch != tt.wantEpoch {
					t.Fatalf("message %d carries epoch %d, want the page's %d", m.Seq, m.Epoch, tt.wantEpoch)
				}
			}
		})
	}
	for _, q := range []string{"epoch=0", "epoch=x", "epoch=-1"} {
		if code, _ := e.call("GET", "/v1/conversations/g/history?"+q, ann, nil); code != http.StatusBadRequest {
			t.Errorf("history?%s: %d, want 400", q, code)
		}
	}
}

// downHistory is a history store whose server does not answer.
type downHistory struct{ memHistory }

func (downHistory) History(context.Context, string, uint64, uint64, int) ([]*schemas.Sequenced, bool, error) {
	return nil, false, errors.New("clickhouse: all connection tries failed")
}

func TestHistoryReadOfAStoreThatIsDownAnswers503NamingTheHistoryStore(t *testing.T) {
	e := newEnv(t, envOptions{history: downHistory{}})
	smallGroup(t, e)
	code, data := e.call("GET", "/v1/conversations/g/history", e.token("ann", ""), nil)
	if code != http.StatusServiceUnavailable || !strings.Contains(string(data), `"history_unavailable"`) {
		t.Fatalf("history with the store down = %d %s, want 503 history_unavailable", code, data)
	}
}
