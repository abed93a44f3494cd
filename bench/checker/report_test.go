package checker

import (
	"fmt"
	"maps"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/offlinebox/offlinebox/client"
	"github.com/offlinebox/offlinebox/schemas"
)

func encode(t *testing.T, m *schemas.Message) []byte {
	t.Helper()
	v, err := proto.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// groupLog is a group founded by a and b, then: a message, c joins, a
// message, a resend of the first, b leaves, a message, a QoS 0 record and
// a poison record.
func groupLog(t *testing.T) *Truth {
	g := func(id, sender string, kind schemas.Kind, users ...string) *schemas.Message {
		return &schemas.Message{ClientMsgId: id, ConvId: "g", ConvType: schemas.ConvType_CONV_TYPE_GROUP, Kind: kind,
			Sender: sender, Recipients: users}
	}
	msg := schemas.Kind_KIND_MESSAGE
	recs := [][]byte{
		encode(t, g("j1", "a", schemas.Kind_KIND_MEMBER_JOIN, "a", "b")),
		encode(t, g("m1", "a", msg)),
		encode(t, g("j2", "a", schemas.Kind_KIND_MEMBER_JOIN, "c")),
		encode(t, g("m2", "b", msg)),
		encode(t, g("m1", "a", msg)),
		encode(t, g("l1", "b", schemas.Kind_KIND_MEMBER_LEAVE, "b")),
		encode(t, g("m3", "c", msg)),
		encode(t, &schemas.Message{ClientMsgId: "typing", ConvId: "g", ConvType: schemas.ConvType_CONV_TYPE_GROUP,
			Kind: msg, Sender: "a", Qos: schemas.QoS_QOS_AT_MOST_ONCE}),
		{0xff, 0x01},
	}
	tr := &Truth{Convs: map[string]*ConvTruth{}}
	for _, r := range recs {
		tr.add(r, 0)
	}
	return tr
}

func TestTruthGivesSeqsInLogOrderAndEntitlesMembersFromTheirJoin(t *testing.T) {
	tr := groupLog(t)
	c := tr.Convs["g"]
	wantIDs := []string{"j1", "m1", "j2", "m2", "l1", "m3"}
	if len(c.IDs) != len(wantIDs) {
		t.Fatalf("ids %v, want %v", c.IDs, wantIDs)
	}
	for i, id := range wantIDs {
		if c.IDs[i] != id {
			t.Fatalf("ids %v, want %v", c.IDs, wantIDs)
		}
	}
	if tr.Records != 9 || tr.Stored != 6 || tr.Resends != 1 || tr.AtMostOnce != 1 || tr.Invalid != 1 {
		t.Fatalf("counts %+v", tr)
	}
	for _, tc := range []struct {
		user     string
		required *Span
		opt      []Span
	}{
		{"a", &Span{0, 7}, nil},    // founder: seq 1 onwards
		{"c", &Span{3, 7}, nil},    // joined at seq 3: from 4 on
		{"b", nil, []Span{{0, 5}}}, // left at seq 5: 1..4 allowed, not owed
		{"z", nil, nil},
	} {
		e, ok := tr.For(tc.user)["g"]
		if ok != (tc.required != nil || tc.opt != nil) {
			t.Errorf("%s: entitled %v", tc.user, ok)
			continue
		}
		if !sameSpan(e.Required, tc.required) || fmt.Sprint(e.Optional) != fmt.Sprint(tc.opt) {
			t.Errorf("%s: required %v optional %v, want %v %v", tc.user, e.Required, e.Optional, tc.required, tc.opt)
		}
	}
}

func sameSpan(a, b *Span) bool {
	if a == nil || b == nil {
		return a == b
	}
	return *a == *b
}

func TestAccountCountsLostDuplicatedMisplacedAndLeakedMessages(t *testing.T) {
	tr := groupLog(t)
	w := &Workload{}
	for _, tc := range []struct {
		name string
		user string
		held map[uint64]string
		want DeviceReport
	}{
		{"everything once", "c", map[uint64]string{4: "m2", 5: "l1", 6: "m3"},
			DeviceReport{Delivery: Delivery{Expected: 3, Delivered: 3}}},
		{"one missing", "c", map[uint64]string{4: "m2", 6: "m3"},
			DeviceReport{Delivery: Delivery{Expected: 3, Delivered: 2, Lost: 1}}},
		{"a resend stored under a new seq", "c", map[uint64]string{4: "m2", 5: "l1", 6: "m3", 7: "m3"},
			DeviceReport{Delivery: Delivery{Expected: 3, Delivered: 3, Duplicates: 1, Unexpected: 1}}},
		{"two messages swapped", "c", map[uint64]string{4: "m3", 5: "l1", 6: "m2"},
			DeviceReport{Delivery: Delivery{Expected: 3, Delivered: 3, OutOfOrder: 2}}},
		{"a message from before the join", "c", map[uint64]string{2: "m1", 4: "m2", 5: "l1", 6: "m3"},
			DeviceReport{Delivery: Delivery{Expected: 3, Delivered: 3, Unexpected: 1}}},
		{"a leaver holding what came before its leave", "b", map[uint64]string{1: "j1", 2: "m1"},
			DeviceReport{}},
		{"a leaver holding its leave", "b", map[uint64]string{5: "l1"},
			DeviceReport{Delivery: Delivery{Unexpected: 1}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := &device{Device: Device{User: tc.user, ID: "d1"}, st: newLocalStore()}
			d.st.conv("g").msgs = inEpoch(1, tc.held)
			r := account(tr, w, []*device{d})
			got := r.Devices[0]
			got.User, got.Device = "", ""
			if got != tc.want {
				t.Fatalf("got %+v, want %+v (problems %v)", got, tc.want, r.Problems)
			}
			if ok := r.OK(); ok != (tc.want == DeviceReport{Delivery: Delivery{Expected: tc.want.Expected, Delivered: tc.want.Delivered}}) {
				t.Fatalf("OK() = %v", ok)
			}
		})
	}
}

// inEpoch places seq → id at positions of one epoch.
func inEpoch(epoch uint64, held map[uint64]string) map[client.Cursor]string {
	out := make(map[client.Cursor]string, len(held))
	for s, id := range held {
		out[client.Cursor{Seq: s, Epoch: epoch}] = id
	}
	return out
}

func TestAccountKeysWhatADeviceHoldsByEpochAndSeq(t *testing.T) {
	tr := groupLog(t)
	d := &device{Device: Device{User: "c", ID: "d1"}, st: newLocalStore()}
	// The same messages at the same seqs of two epochs (a rebuild from a
	// history that lost nothing) are the messages both timelines share.
	held := inEpoch(1, map[uint64]string{4: "m2", 5: "l1", 6: "m3"})
	maps.Copy(held, inEpoch(2, map[uint64]string{4: "m2", 5: "l1"}))
	d.st.conv("g").msgs = held
	r := account(tr, &Workload{}, []*device{d})
	if got := r.Devices[0]; got.Expected != 3 || got.Delivered != 3 || got.Duplicates != 0 || !r.OK() {
		t.Fatalf("device report %+v (problems %v), want 3 of 3 delivered, no duplicate", got, r.Problems)
	}
	// Another message at a seq of another epoch is no broken promise; the
	// same position twice with two ids is.
	s := newLocalStore()
	s.put(&client.Message{ConvID: "g", Seq: 41, Epoch: 1, ClientMsgID: "old41"})
	s.put(&client.Message{ConvID: "g", Seq: 41, Epoch: 2, ClientMsgID: "new41"})
	if s.misordered != 0 || s.redelivered != 0 || len(s.conv("g").msgs) != 2 {
		t.Fatalf("two epochs' seq 41: misordered %d, redelivered %d, held %d; want 0, 0, 2", s.misordered, s.redelivered, len(s.conv("g").msgs))
	}
	s.put(&client.Message{ConvID: "g", Seq: 41, Epoch: 2, ClientMsgID: "other"})
	if s.misordered != 1 {
		t.Fatalf("a second id at one position was not flagged: %v", s.problems)
	}
}

func TestDeviceStoreFlagsSlicesThatSkipOrRepeatSeqs(t *testing.T) {
	s := newLocalStore()
	s.apply(syncOf("g", 1, 2, 3))
	if s.misordered != 0 {
		t.Fatalf("a contiguous slice was flagged: %v", s.problems)
	}
	s.apply(syncOf("g", 5, 4))
	if s.misordered == 0 {
		t.Fatal("a descending slice was not flagged")
	}
	if c := s.conv("g"); c.cursor != 5 || len(c.msgs) != 5 {
		t.Fatalf("cursor %d, %d messages", c.cursor, len(c.msgs))
	}
}

func syncOf(conv string, seqs ...uint64) client.SyncResponse {
	sc := client.SyncConv{ConvID: conv, Epoch: 1, MaxSeq: 10}
	for _, q := range seqs {
		sc.Messages = append(sc.Messages, client.Message{ConvID: conv, Seq: q, ClientMsgID: fmt.Sprint("m", q)})
	}
	return client.SyncResponse{Conversations: []client.SyncConv{sc}}
}

func TestAccountCountsAcceptedMessagesMissingFromTheLog(t *testing.T) {
	tr := groupLog(t)
	d := &device{Device: Device{User: "a", ID: "d1"}, st: newLocalStore()}
	d.accepted = []*schemas.Message{{ConvId: "g", ClientMsgId: "m2"}, {ConvId: "g", ClientMsgId: "never-logged"}}
	r := account(tr, &Workload{}, []*device{d})
	if r.NotInLog != 1 || r.OK() {
		t.Fatalf("not in log %d, OK %v; want 1 and false", r.NotInLog, r.OK())
	}
}

// A user who left at seq 19 and was added back at 45 is sliced across
// their spans, 17, 18 then 46: the seqs between were never theirs. The
// same slice to a member throughout skipped what it was owed.
func TestAccountAllowsASliceToSkipOnlySeqsTheUserWasNoMemberFor(t *testing.T) {
	c := &ConvTruth{Seq: map[string]uint64{}, Members: map[string]uint64{"a": 0, "b": 45}, Left: map[string][]Span{"b": {{0, 19}}}}
	for s := uint64(1); s <= 46; s++ {
		c.IDs = append(c.IDs, fmt.Sprint("m", s))
		c.Seq[fmt.Sprint("m", s)] = s
	}
	tr := &Truth{Convs: map[string]*ConvTruth{"g": c}}
	for _, tc := range []struct {
		user    string
		skipped bool // flagged as a skip of owed seqs
	}{
		{user: "b"},
		{user: "a", skipped: true},
	} {
		d := &device{Device: Device{User: tc.user, ID: "d1"}, st: newLocalStore()}
		sync := syncOf("g", 17, 18, 46)
		sync.Conversations[0].MaxSeq = 46
		d.st.apply(sync)
		r := account(tr, &Workload{}, []*device{d})
		flagged := r.Devices[0].OutOfOrder != 0
		if flagged != tc.skipped || (!tc.skipped && !r.OK()) {
			t.Errorf("%s: skip flagged %v, want %v; out of order %d, problems %v", tc.user, flagged, tc.skipped, r.Devices[0].OutOfOrder, r.Problems)
		}
	}
}
