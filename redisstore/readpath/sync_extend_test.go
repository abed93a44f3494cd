package readpath

import (
	"context"
	"fmt"
	"testing"

	"github.com/offlinebox/offlinebox/schemas"

	"github.com/offlinebox/offlinebox/redisstore"
)

// A sync answer is read in two passes: the first caps a group's slice to
// its newest messages, the second extends it downwards. The extension may
// step over seqs the user may not read (they left and came back: each
// span is theirs, nothing between), never over seqs they may read. Redis
// may lose its tail between the passes (killed, started from an older
// snapshot, the restore from im.sequenced not done yet: the same epoch, a
// lower max seq); joined to the first slice then, the newest entries it
// still holds would hide the seqs between with no gap named.
func TestSyncExtensionStepsOverSeqsOutsideTheUsersSpansOnly(t *testing.T) {
	ctx := context.Background()
	says := func(rs *readSeed, n int) {
		for i := range n {
			rs.say("g", group, "bob", "", fmt.Sprintf("message %02d", i))
		}
	}
	for _, tc := range []struct {
		name string
		// seed leaves seq 46 the newest of g, which ann may read.
		seed func(rs *readSeed)
		keep uint64 // max seq Redis has between the passes; 0: nothing lost
		want string
	}{
		{
			name: "ann left at 19 and was added back at 45",
			seed: func(rs *readSeed) {
				rs.group("g", "bob", "ann", "cid")
				says(rs, 17)
				rs.send(&schemas.Message{ConvId: "g", ConvType: group, Sender: "ann", Kind: schemas.Kind_KIND_MEMBER_LEAVE, Recipients: []string{"ann"}})
				says(rs, 25)
				rs.send(&schemas.Message{ConvId: "g", ConvType: group, Sender: "bob", Kind: schemas.Kind_KIND_MEMBER_JOIN, Recipients: []string{"ann"}})
				says(rs, 1)
			},
			want: "seqs=[17 18 46] (steps over seqs) gap=none",
		},
		{
			name: "tail lost between the passes",
			seed: func(rs *readSeed) { rs.group("g", "bob", "ann"); says(rs, 45) },
			keep: 18,
			want: "seqs=[46] gap=17..45",
		},
		{
			name: "one span, nothing lost",
			seed: func(rs *readSeed) { rs.group("g", "bob", "ann"); says(rs, 45) },
			want: "seqs=[17 .. 46] gap=none",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := readTestStore(t, 100)
			tc.seed(newReadSeed(t, s))
			req := syncReq("ann", "phone", 200, 64<<10)
			req.Cursors["g"] = redisstore.Position{Seq: 16}
			// The first pass keeps one message of the group: its cap is
			// the block's head and a byte.
			req.GroupSliceBytes = testSizer{}.Conv(nil) + 1
			us, err := s.readSyncUser(ctx, req.User, req.Device, 0)
			if err != nil {
				t.Fatal(err)
			}
			heads, err := s.readSyncHeads(ctx, req.User, us)
			if err != nil {
				t.Fatal(err)
			}
			plans, _ := planSync(req, us, heads)
			res, b := &SyncResult{}, newSyncBudget(req)
			fs, err := s.placeConvs(ctx, req, plans, make([]placement, len(plans)), res, b)
			if err != nil {
				t.Fatal(err)
			}
			if len(res.Convs) != 1 || fmt.Sprint(seqsOf(res.Convs[0].Messages)) != "[46]" {
				t.Fatalf("first pass answered, want g with [46]:\n%s", render(res))
			}
			if tc.keep > 0 {
				// What a snapshot taken at seq keep holds: meta and the
				// timeline up to it.
				if err := s.rdb.HSet(ctx, s.keys.ConvMeta("g"), "seq", tc.keep).Err(); err != nil {
					t.Fatal(err)
				}
				if err := s.rdb.LTrim(ctx, s.keys.Timeline("g"), 0, int64(tc.keep)-1).Err(); err != nil {
					t.Fatal(err)
				}
			}
			if err := s.extendSlices(ctx, req, plans, fs.extensions(), res, b); err != nil {
				t.Fatal(err)
			}
			if got := describeSlice(res.Convs[0]); got != tc.want {
				t.Fatalf("answered %s, want %s:\n%s", got, tc.want, render(res))
			}
		})
	}
}

// describeSlice prints a block's seqs (a contiguous run as first .. last)
// and its gap.
func describeSlice(c SyncConv) string {
	seqs := seqsOf(c.Messages)
	for i := 1; i < len(seqs); i++ {
		if seqs[i] != seqs[i-1]+1 {
			return fmt.Sprintf("seqs=%v (steps over seqs) gap=%v", seqs, gapString(c.Gap))
		}
	}
	s := fmt.Sprint(seqs)
	if len(seqs) > 2 {
		s = fmt.Sprintf("[%d .. %d]", seqs[0], seqs[len(seqs)-1])
	}
	return fmt.Sprintf("seqs=%s gap=%s", s, gapString(c.Gap))
}

func gapString(g *SeqRange) string {
	if g == nil {
		return "none"
	}
	return fmt.Sprintf("%d..%d", g.From, g.To)
}

// Rooms within one grain ask the same extension read, never one cut
// below the room.
func TestExtensionReadsOfNearbyRoomsAreTheSameRead(t *testing.T) {
	for _, tc := range []struct{ a, b int }{{1, extendReadGrain}, {extendReadGrain + 1, 2 * extendReadGrain}, {50_000, 60_000}} {
		ra, rb := extendReadBytes(tc.a), extendReadBytes(tc.b)
		if ra != rb || ra < tc.a || rb < tc.b || ra-tc.a >= extendReadGrain {
			t.Errorf("rooms %d and %d read %d and %d bytes; want one read of at least both, under a grain more", tc.a, tc.b, ra, rb)
		}
	}
	if extendReadBytes(extendReadGrain) == extendReadBytes(extendReadGrain+1) {
		t.Error("rooms in two grains read the same")
	}
}
