package readpath

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/offlinebox/offlinebox/redisstore"
)

func TestMentionMarkReadsBackWhatItWrote(t *testing.T) {
	cases := []struct {
		in string
		ok bool
	}{
		{MentionMark{TS: 1700000000000, Conv: "g-watercooler", Seq: 42}.String(), true},
		{"12:3:d-alice-bob", true},
		{"12:3:", false},
		{"12:x:c", false},
		{"-1:3:c", false},
		{"12:3", false},
		{"", false},
	}
	for _, tc := range cases {
		m, err := ParseMentionMark(tc.in)
		if (err == nil) != tc.ok || (tc.ok && m.String() != tc.in) {
			t.Fatalf("ParseMentionMark(%q) = %+v, %v; want ok %v", tc.in, m, err, tc.ok)
		}
	}
}

// A lane longer than the budget is answered a page at a time, newest
// first, each page within the budget, the pages together every pending
// mention once (the slice carries the newest, the lane the rest); once the
// device acked the conversation, none is sent again.
func TestSyncPagesALongMentionLaneWithinTheBudget(t *testing.T) {
	s := readTestStore(t, 100)
	rs := newReadSeed(t, s)
	rs.group("g", "bob", "ann")
	pending := map[uint64]bool{}
	for i := range 300 {
		pending[rs.say("g", group, "bob", "", fmt.Sprintf("@ann %d %s", i, strings.Repeat("x", 200)), "ann")] = true
	}
	ctx := context.Background()
	const budget = 16 << 10
	req := syncReq("ann", "phone", 5, budget)
	seen := map[uint64]int{}
	var top, epoch uint64
	pages := 0
	for {
		pages++
		if pages > 100 {
			t.Fatal("the lane never ends")
		}
		res, err := s.Sync(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		if res.Bytes > budget || len(res.Mentions) == 0 {
			t.Fatalf("page %d: %d bytes of %d, %d mentions", pages, res.Bytes, budget, len(res.Mentions))
		}
		for i, m := range res.Mentions {
			seen[m.Message.Seq]++
			if i > 0 && m.Message.Seq > res.Mentions[i-1].Message.Seq {
				t.Fatalf("page %d not newest first: %d after %d", pages, m.Message.Seq, res.Mentions[i-1].Message.Seq)
			}
		}
		for _, c := range res.Convs {
			epoch = c.Epoch
			for _, m := range c.Messages {
				seen[m.Seq]++
				top = max(top, m.Seq)
			}
		}
		if !res.MentionsMore {
			break
		}
		req.MentionsAfter = res.MentionsNext
	}
	if pages < 3 {
		t.Fatalf("%d pages: the lane was not bounded", pages)
	}
	for seq := range pending {
		// The slice is in every page (the cursor did not move): its seqs
		// come once per page, the lane's once.
		if seen[seq] == 0 || (seq < top-4 && seen[seq] != 1) {
			t.Fatalf("mention %d seen %d times over %d pages", seq, seen[seq], pages)
		}
	}
	if _, err := s.AckDevice(ctx, "ann", "phone", []redisstore.AckItem{{Conv: "g", Seq: top, Epoch: epoch}}, 1); err != nil {
		t.Fatal(err)
	}
	res, err := s.Sync(ctx, syncReq("ann", "phone", 5, budget))
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Mentions) != 0 || res.MentionsMore {
		t.Fatalf("mentions the device acked sent again:\n%s", render(res))
	}
}
