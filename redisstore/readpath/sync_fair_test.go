package readpath

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/offlinebox/offlinebox/schemas"
)

// fairSeed is the founding scenario scaled down: a noisy group whose
// backlog alone is several budgets, with two early mentions of ann, six
// direct conversations and a quiet group.
func fairSeed(t *testing.T) *rig {
	s := readTestStore(t, 100)
	rs := newReadSeed(t, s)
	rs.group("noisy", "bob", "ann", "cid")
	long := strings.Repeat("noise ", 70)
	for i := range 120 {
		var mentions []string
		if i == 4 || i == 60 {
			mentions = []string{"ann"}
		}
		rs.say("noisy", group, []string{"bob", "cid"}[i%2], "", long, mentions...)
	}
	for d := range 6 {
		for i := range 6 {
			rs.say(fmt.Sprint("d", d), direct, fmt.Sprint("peer", d), "ann", fmt.Sprintf("direct %d of %d %s", i, d, strings.Repeat("d", 150)))
		}
	}
	rs.group("quiet", "eve", "ann")
	rs.say("quiet", group, "eve", "", "hello")
	return s
}

func directMessages(res *SyncResult) int {
	n := 0
	for _, c := range res.Convs {
		if c.Type == schemas.ConvType_CONV_TYPE_DIRECT {
			n += len(c.Messages)
		}
	}
	return n
}

func TestSyncCapsGroupSlicesSoDirectConversationsGetTheBudget(t *testing.T) {
	s := fairSeed(t)
	ctx := context.Background()
	const budget = 16 << 10
	uncapped := syncReq("ann", "phone", 200, budget)
	uncapped.GroupSliceBytes = budget
	before, err := s.Sync(ctx, uncapped)
	if err != nil {
		t.Fatal(err)
	}
	res, err := s.Sync(ctx, syncReq("ann", "phone", 200, budget))
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Mentions) != 2 || res.Bytes > budget {
		t.Fatalf("want both mentions within %d bytes:\n%s", budget, render(res))
	}
	if got, was := directMessages(res), directMessages(before); got != 36 || got <= was {
		t.Fatalf("%d direct messages in the answer (%d without the cap), want all 36:\n%s", got, was, render(res))
	}
	// The order is the design's: the group with mentions, the direct
	// conversations, then by activity.
	var order []string
	for _, c := range res.Convs {
		order = append(order, c.Conv)
	}
	if want := "[noisy d5 d4 d3 d2 d1 d0 quiet]"; fmt.Sprint(order) != want {
		t.Fatalf("answered %v, want %s:\n%s", order, want, render(res))
	}
	checkNewestWithGap(t, res, res.Convs[:1], "noisy")
	again, err := s.Sync(ctx, syncReq("ann", "phone", 200, budget))
	if err != nil {
		t.Fatal(err)
	}
	if render(again) != render(res) {
		t.Fatalf("repeated request answered differently:\n%s\nthen\n%s", render(res), render(again))
	}
}

func TestSyncExtendsCappedGroupsWithWhatIsLeft(t *testing.T) {
	s := fairSeed(t)
	ctx := context.Background()
	cases := []struct {
		name   string
		budget int
		limit  int
	}{
		{"up to the limit when the budget allows", 64 << 10, 50},
		{"as far as the budget allows", 48 << 10, 200},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			req := syncReq("ann", "phone", tc.limit, tc.budget)
			res, err := s.Sync(ctx, req)
			if err != nil {
				t.Fatal(err)
			}
			noisy := res.Convs[0]
			first := newestThatFit(sizesOf(req, noisy), req.groupCap(convPlan{ctype: schemas.ConvType_CONV_TYPE_GROUP})-req.Sizer.Conv(&noisy))
			if noisy.Conv != "noisy" || len(noisy.Messages) <= first || len(noisy.Messages) > tc.limit || res.Bytes > tc.budget {
				t.Fatalf("noisy holds %d messages (first pass %d, limit %d), %d bytes of %d:\n%s",
					len(noisy.Messages), first, tc.limit, res.Bytes, tc.budget, render(res))
			}
			checkNewestWithGap(t, res, res.Convs[:1], "noisy")
			if directMessages(res) != 36 || len(res.Summaries) != 0 {
				t.Fatalf("the extension took what the first pass gave others:\n%s", render(res))
			}
			if len(noisy.Messages) < tc.limit && tc.budget-res.Bytes >= req.Sizer.Message(noisy.Messages[0]) {
				t.Fatalf("%d bytes left, enough for another message of noisy:\n%s", tc.budget-res.Bytes, render(res))
			}
		})
	}
}

func sizesOf(req SyncRequest, c SyncConv) []int {
	out := make([]int, len(c.Messages))
	for i, m := range c.Messages {
		out[i] = req.Sizer.Message(m)
	}
	return out
}
