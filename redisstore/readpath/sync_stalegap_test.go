package readpath

import (
	"context"
	"testing"
)

// A group slice the second pass extended down to the cursor names no gap:
// a gap over seqs the answer holds makes the client page them again.
func TestSyncExtendedGroupWithNothingOlderNamesNoGap(t *testing.T) {
	s := fairSeed(t)
	res, err := s.Sync(context.Background(), syncReq("ann", "phone", 200, 256<<10))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range res.Convs {
		if c.Gap != nil && (!c.HasMore || c.Gap.To >= c.Messages[0].Seq) {
			t.Errorf("%s: %d messages %d..%d, has_more %v, gap %+v", c.Conv, len(c.Messages), c.Messages[0].Seq, c.Messages[len(c.Messages)-1].Seq, c.HasMore, *c.Gap)
		}
	}
}
