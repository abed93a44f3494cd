package redisstore

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

func TestRejectionsAreKeptOncePerRecordNewestBoundedAndReadFromATime(t *testing.T) {
	s := newPresenceStore(t)
	ctx := context.Background()
	now := time.Now()
	at := func(ago time.Duration) int64 { return now.Add(-ago).UnixMilli() }
	rej := func(sender, id string, ago time.Duration) Rejection {
		return Rejection{Sender: sender, Conv: "g1", ClientMsgID: id, Reason: "sender: not a member of g1", AtMS: at(ago)}
	}

	tests := []struct {
		name  string
		add   []Rejection
		user  string
		since int64
		want  []string // client_msg_ids, oldest first
	}{
		{name: "two senders in one call, each in their own list",
			add:  []Rejection{rej("ann", "a1", 3*time.Minute), rej("bob", "b1", 2*time.Minute), rej("ann", "a2", time.Minute)},
			user: "ann", want: []string{"a1", "a2"}},
		{name: "a replayed refusal is kept once",
			add:  []Rejection{rej("ann", "a1", 3*time.Minute)},
			user: "ann", want: []string{"a1", "a2"}},
		{name: "read from a time leaves the older out",
			user: "ann", since: at(2 * time.Minute), want: []string{"a2"}},
		{name: "a refusal older than the week kept goes",
			add:  []Rejection{rej("bob", "old", RejectionsKept+time.Hour)},
			user: "bob", want: []string{"b1"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := s.AddRejections(ctx, tc.add, now); err != nil {
				t.Fatal(err)
			}
			got, err := s.Rejections(ctx, tc.user, tc.since)
			if err != nil {
				t.Fatal(err)
			}
			var ids []string
			for _, r := range got {
				if r.Sender != tc.user || r.Conv != "g1" || r.Reason == "" {
					t.Errorf("rejection %+v is not the one kept for %s", r, tc.user)
				}
				ids = append(ids, r.ClientMsgID)
			}
			if strings.Join(ids, ",") != strings.Join(tc.want, ",") {
				t.Fatalf("rejections of %s since %d: %v, want %v", tc.user, tc.since, ids, tc.want)
			}
		})
	}

	t.Run("only the newest are kept, and the key expires", func(t *testing.T) {
		var many []Rejection
		for i := range MaxRejectionsPer + 25 {
			many = append(many, rej("cat", fmt.Sprintf("c%03d", i), time.Duration(MaxRejectionsPer+25-i)*time.Second))
		}
		if _, err := s.AddRejections(ctx, many, now); err != nil {
			t.Fatal(err)
		}
		got, err := s.Rejections(ctx, "cat", 0)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != MaxRejectionsPer || got[0].ClientMsgID != "c025" || got[len(got)-1].ClientMsgID != fmt.Sprintf("c%03d", MaxRejectionsPer+24) {
			t.Fatalf("kept %d, from %s to %s; want the newest %d", len(got), got[0].ClientMsgID, got[len(got)-1].ClientMsgID, MaxRejectionsPer)
		}
		ttl, err := s.rdb.PTTL(ctx, s.keys.Rejections("cat")).Result()
		if err != nil || ttl <= 0 || ttl > RejectionsKept {
			t.Fatalf("the list's expiry is %v (%v), want within %v", ttl, err, RejectionsKept)
		}
	})
}

func TestARejectionsReasonIsCutOnARuneEdge(t *testing.T) {
	long := strings.Repeat("é", MaxRejectionReason) // two bytes each
	got := CutRejectionReason("x" + long)
	if len(got) > MaxRejectionReason || !utf8.ValidString(got) || !strings.HasPrefix("x"+long, got) {
		t.Fatalf("cut reason: %d bytes, valid %v", len(got), utf8.ValidString(got))
	}
	if CutRejectionReason("short") != "short" {
		t.Fatal("a short reason is kept whole")
	}
}

func TestASenderWhoseListCanNeverBeWrittenFailsAloneAndTheOthersAreKept(t *testing.T) {
	s := newPresenceStore(t)
	ctx := context.Background()
	now := time.Now()
	if err := s.rdb.Set(ctx, s.keys.Rejections("bob"), "not a zset", 0).Err(); err != nil {
		t.Fatal(err)
	}
	rs := []Rejection{
		{Sender: "ann", Conv: "g", ClientMsgID: "a1", Reason: "r", AtMS: now.UnixMilli()},
		{Sender: "bob", Conv: "g", ClientMsgID: "b1", Reason: "r", AtMS: now.UnixMilli()},
		{Sender: "bob", Conv: "g", ClientMsgID: "b2", Reason: "r", AtMS: now.UnixMilli()},
	}
	_, err := s.AddRejections(ctx, rs, now)
	var failed ItemErrors
	if !errors.As(err, &failed) || len(failed) != 2 || failed[1] == nil || failed[2] == nil {
		t.Fatalf("AddRejections: %v, want ItemErrors naming bob's two (1 and 2)", err)
	}
	got, err := s.Rejections(ctx, "ann", 0)
	if err != nil || len(got) != 1 || got[0].ClientMsgID != "a1" {
		t.Fatalf("ann's list is %+v (%v), want a1 kept", got, err)
	}
}

// A refusal kept before refusals carried a code is read in the public
// vocabulary: its code from the reason's beginning and the code's
// sentence in place of a reason that names internals; one kept for a
// record that was sequenced after all is not listed.
func TestARejectionKeptWithoutACodeIsReadByItsPublicCodeAndOneOfASequencedRecordIsNot(t *testing.T) {
	s := newPresenceStore(t)
	ctx := context.Background()
	now := time.Now()
	rs := []Rejection{
		{Sender: "ann", Conv: "g", ClientMsgID: "held", Reason: "not sequenced: the sequencing of g can never succeed: OBHELD P{c:g}:held is set", AtMS: now.UnixMilli() - 3},
		{Sender: "ann", Conv: "g", ClientMsgID: "seq", Reason: "sequenced as seq 4 of g (epoch 1), but its inbox update failed for good for 1 recipients: bob: WRONGTYPE", AtMS: now.UnixMilli() - 2},
		{Sender: "ann", Conv: "g", ClientMsgID: "new", Code: "not_a_member", Reason: "You are not a member of this conversation.", AtMS: now.UnixMilli() - 1},
	}
	if _, err := s.AddRejections(ctx, rs, now); err != nil {
		t.Fatal(err)
	}
	got, err := s.Rejections(ctx, "ann", 0)
	if err != nil {
		t.Fatal(err)
	}
	want := []Rejection{
		{Sender: "ann", Conv: "g", ClientMsgID: "held", Code: "conversation_unavailable", Reason: "The conversation cannot take messages right now.", AtMS: rs[0].AtMS},
		{Sender: "ann", Conv: "g", ClientMsgID: "new", Code: "not_a_member", Reason: "You are not a member of this conversation.", AtMS: rs[2].AtMS},
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("ann's list is %+v, want %+v", got, want)
	}
}
