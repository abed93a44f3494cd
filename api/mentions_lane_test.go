package api

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	obclient "github.com/offlinebox/offlinebox/client"
	"github.com/offlinebox/offlinebox/schemas"
)

// mentionStory is groups of bob and ann in which every message of bob
// mentions ann: perGroup pending mentions in each.
func mentionStory(groups, perGroup int) (msgs []*schemas.Message, want map[string]bool) {
	want = map[string]bool{}
	pad := strings.Repeat(" and more", 20)
	for g := range groups {
		conv := fmt.Sprint("lane-", g)
		msgs = append(msgs, founding(conv, "bob", "ann"))
		for i := range perGroup {
			msgs = append(msgs, textMsg(conv, fmt.Sprintf("%s-%d", conv, i), "bob", mentioning("ann"), func(m *schemas.Message) {
				m.Body = append(m.Body, pad...)
			}))
			want[fmt.Sprintf("%s:%d", conv, i+2)] = true // seq 1 is the founding join
		}
	}
	return msgs, want
}

// heldMentions is which of want the device holds, as the lane, a slice or
// a gap page brought them.
func heldMentions(held *obclient.Held, want map[string]bool) int {
	n := 0
	for k := range want {
		conv, seq, _ := strings.Cut(k, ":")
		hc := held.Convs[conv]
		if hc == nil {
			continue
		}
		for at := range hc.Msgs {
			if fmt.Sprint(at.Seq) == seq {
				n++
				break
			}
		}
	}
	return n
}

func heldCount(held *obclient.Held) int {
	n := 0
	for _, hc := range held.Convs {
		n += len(hc.Msgs)
	}
	return n
}

// A device with a long mention lane that follows the documented protocol
// (sync, store, ack, sync again, then page the gaps) catches up every
// mention: every answer within max_bytes, each bringing something new,
// until the one that says there is nothing more. The SDK's catch-up does
// the same on a second device.
func TestADeviceCatchesUpALongMentionLaneWithinTheBudget(t *testing.T) {
	cases := []struct {
		name             string
		groups, perGroup int
		maxBytes         int
	}{
		{"600 pending mentions in one group", 1, 600, DefaultSyncBytes},
		{"600 pending mentions in three groups, a small budget", 3, 200, 32 << 10},
		{"5000 pending mentions in ten groups", 10, 500, DefaultSyncBytes},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, envOptions{threshold: 100})
			e.runPipeline()
			msgs, want := mentionStory(tc.groups, tc.perGroup)
			e.produce(msgs...)
			e.waitForLastSeqs("ann", tc.groups, uint64(tc.perGroup+1))
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()

			phone := obclient.New(e.srv.URL, e.token("ann", "phone"), nil)
			held := obclient.NewHeld()
			after := ""
			for round := 0; ; round++ {
				if round == 50 {
					t.Fatalf("not caught up after %d syncs: %d of %d mentions held", round, heldMentions(held, want), len(want))
				}
				body := map[string]any{"cursors": held.Cursors(), "max_bytes": tc.maxBytes}
				if after != "" {
					body["mentions_after"] = after
				}
				data := e.callOK(http.StatusOK, "POST", "/v1/sync", phone.Token, body, nil)
				if len(data) > tc.maxBytes {
					t.Fatalf("sync %d: answer of %d bytes, over max_bytes %d", round, len(data), tc.maxBytes)
				}
				var resp obclient.SyncResponse
				if err := json.Unmarshal(data, &resp); err != nil {
					t.Fatal(err)
				}
				before := heldCount(held)
				acks := held.Apply(resp)
				done := len(resp.Conversations) == 0 && len(resp.Summaries) == 0 && resp.Omitted == 0 && !resp.MentionsMore
				if done {
					break
				}
				if heldCount(held) == before {
					t.Fatalf("sync %d brought nothing new (%d mentions, %d conversations, %d summaries, %d omitted)",
						round, len(resp.Mentions), len(resp.Conversations), len(resp.Summaries), resp.Omitted)
				}
				if err := phone.Ack(ctx, acks); err != nil {
					t.Fatal(err)
				}
				after = ""
				if resp.MentionsMore {
					after = resp.MentionsNext
				}
			}
			// The gaps the answers named hold the rest.
			if _, err := phone.CatchUp(ctx, held, obclient.CatchUpOptions{MaxBytes: tc.maxBytes, MaxRounds: 50}); err != nil {
				t.Fatal(err)
			}
			if n := heldMentions(held, want); n != len(want) {
				t.Fatalf("the phone holds %d of %d mentions", n, len(want))
			}

			laptop := obclient.New(e.srv.URL, e.token("ann", "laptop"), nil)
			lheld := obclient.NewHeld()
			st, err := laptop.CatchUp(ctx, lheld, obclient.CatchUpOptions{MaxBytes: tc.maxBytes, MaxRounds: 50})
			if err != nil {
				t.Fatal(err)
			}
			if n := heldMentions(lheld, want); n != len(want) {
				t.Fatalf("the SDK's catch-up holds %d of %d mentions", n, len(want))
			}
			if st.FirstDecodedBytes > tc.maxBytes {
				t.Fatalf("the SDK's first answer is %d bytes, over %d", st.FirstDecodedBytes, tc.maxBytes)
			}
		})
	}
}

// waitForLastSeqs waits until user's list shows n conversations, each at
// seq last: fanout is through.
func (e *env) waitForLastSeqs(user string, n int, last uint64) {
	tok := e.token(user, "")
	eventually(e.t, "the pipeline delivers the story", func() (bool, string) {
		var l conversationListJSON
		e.callOK(http.StatusOK, "GET", "/v1/conversations?limit=200", tok, nil, &l)
		if len(l.Conversations) != n {
			return false, fmt.Sprintf("%d conversations listed", len(l.Conversations))
		}
		for _, c := range l.Conversations {
			if c.LastSeq != last {
				return false, fmt.Sprintf("%s at %d, want %d", c.ConvID, c.LastSeq, last)
			}
		}
		return true, ""
	})
}
