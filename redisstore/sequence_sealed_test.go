package redisstore

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/offlinebox/offlinebox/internal/testenv"
	"github.com/offlinebox/offlinebox/schemas"
	"github.com/offlinebox/offlinebox/seal"
)

func sealTestRing(t *testing.T) *seal.FileRing {
	t.Helper()
	k, err := seal.GenerateMasterKey("m1")
	if err != nil {
		t.Fatal(err)
	}
	ring, err := seal.NewFileRing([]seal.MasterKey{k})
	if err != nil {
		t.Fatal(err)
	}
	return ring
}

// sealedStores returns n stores over one Redis and prefix, each with its
// own prediction cache (as separate fanout processes have), sealing with
// one ring; and the sealer that opens what they stored.
func sealedStores(t *testing.T, n int) ([]*Store, *seal.Sealer) {
	t.Helper()
	rdb, prefix := testenv.Redis(t)
	plain, err := New(rdb, Config{Prefix: prefix})
	if err != nil {
		t.Fatal(err)
	}
	ring := sealTestRing(t)
	var out []*Store
	for range n {
		s, err := New(rdb, Config{Prefix: prefix, Sealer: seal.NewSealer(ring, plain, 0)})
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, s)
	}
	return out, seal.NewSealer(ring, plain, 0)
}

// openTimeline checks every stored entry is sealed (no plaintext in it)
// and opens at its seq; it returns the opened bodies by seq.
func openTimeline(t *testing.T, s *Store, opener *seal.Sealer, conv string, plaintexts [][]byte) map[uint64]string {
	t.Helper()
	ctx := context.Background()
	raw, err := s.rdb.LRange(ctx, s.keys.Timeline(conv), 0, -1).Result()
	if err != nil {
		t.Fatal(err)
	}
	epoch, err := s.rdb.HGet(ctx, s.keys.ConvMeta(conv), "epoch").Uint64()
	if err != nil {
		t.Fatal(err)
	}
	out := map[uint64]string{}
	for _, e := range timeline(t, s, conv) {
		m := e.GetMessage()
		if m.GetKind() != schemas.Kind_KIND_MESSAGE {
			continue
		}
		if m.GetSealedEpoch() == 0 {
			t.Fatalf("seq %d is stored in the clear", e.GetSeq())
		}
		open, err := opener.OpenBody(ctx, conv, epoch, e.GetSeq(), m)
		if err != nil {
			t.Fatalf("seq %d does not open: %v", e.GetSeq(), err)
		}
		out[e.GetSeq()] = string(open.GetBody())
	}
	for _, e := range raw {
		for _, p := range plaintexts {
			if bytes.Contains([]byte(e), p) {
				t.Fatalf("plaintext %q found in a stored entry", p)
			}
		}
	}
	return out
}

func TestSealedSequencingStoresOnlyCiphertextThatOpensAtItsSeq(t *testing.T) {
	stores, opener := sealedStores(t, 1)
	s, ctx, conv := stores[0], context.Background(), "sealed1"
	join := memberMsg(conv, "j", "alice", schemas.Kind_KIND_MEMBER_JOIN, "alice", "bob")
	a, b := groupMsg(conv, "a", "alice"), groupMsg(conv, "b", "bob")
	dupA := groupMsg(conv, "a", "alice")
	wrongType := directMsg(conv, "w", "alice", "bob")
	c := groupMsg(conv, "c", "alice")
	c.Tag = "ops" // the tags follow the sealing arguments
	// a duplicate and a refusal in the middle shift every later seq by
	// one: the bodies behind them must be sealed again
	res, err := s.Sequence(ctx, conv, []*schemas.Message{join, a, dupA, wrongType, b, c}, nil, seqTestNow)
	if err != nil {
		t.Fatal(err)
	}
	want := []struct {
		st  SeqStatus
		seq uint64
	}{{SeqNew, 1}, {SeqNew, 2}, {SeqDuplicate, 2}, {SeqRejected, 0}, {SeqNew, 3}, {SeqNew, 4}}
	for i, w := range want {
		if it := res.Items[i]; it.Status != w.st || it.Seq != w.seq {
			t.Fatalf("record %d: status %d seq %d, want %d %d", i, it.Status, it.Seq, w.st, w.seq)
		}
	}
	if sq := res.Items[4].Sequenced; sq.GetMessage().GetSealedEpoch() != seal.SealedInRecordEpoch || bytes.Contains(sq.GetMessage().GetBody(), []byte("hello b")) {
		t.Fatal("the sequenced record to produce does not carry the sealed body")
	}
	got := openTimeline(t, s, opener, conv, [][]byte{[]byte("hello a"), []byte("hello b"), []byte("hello c")})
	if got[2] != "hello a" || got[3] != "hello b" || got[4] != "hello c" {
		t.Fatalf("opened bodies %v", got)
	}
	prev, err := s.rdb.HGet(ctx, s.keys.ConvMeta(conv), "lprev").Result()
	if err != nil {
		t.Fatal(err)
	}
	if text, err := opener.OpenPreview(ctx, conv, prev); err != nil || text != "hello c" || prev == "hello c" {
		t.Fatalf("meta preview %q opens to %q, %v; want sealed \"hello c\"", prev, text, err)
	}
	if tag, _ := s.rdb.HGet(ctx, s.keys.ConvMeta(conv), "tag").Result(); tag != "ops" {
		t.Fatalf("the conversation's tag is %q, want ops", tag)
	}
	// a replay of the whole batch changes nothing and needs no seal
	again, err := s.Sequence(ctx, conv, []*schemas.Message{join, a, b, c}, nil, seqTestNow)
	if err != nil {
		t.Fatal(err)
	}
	for i, it := range again.Items {
		if it.Status != SeqDuplicate {
			t.Fatalf("replayed record %d: status %d", i, it.Status)
		}
	}
	if n, _ := s.rdb.LLen(ctx, s.keys.Timeline(conv)).Result(); n != 4 {
		t.Fatalf("timeline holds %d entries after a replay, want 4", n)
	}
}

func TestSealedSequencingReseals_WhenAnotherWriterMovedTheCounter(t *testing.T) {
	stores, opener := sealedStores(t, 2)
	ctx, conv := context.Background(), "sealed2"
	var plain [][]byte
	send := func(s *Store, ids ...string) {
		t.Helper()
		var msgs []*schemas.Message
		for _, id := range ids {
			m := directMsg(conv, id, "alice", "bob")
			plain = append(plain, m.GetBody())
			msgs = append(msgs, m)
		}
		res, err := s.Sequence(ctx, conv, msgs, nil, seqTestNow)
		if err != nil {
			t.Fatal(err)
		}
		for i, it := range res.Items {
			if it.Status != SeqNew {
				t.Fatalf("%s: status %d", ids[i], it.Status)
			}
		}
	}
	send(stores[0], "a1", "a2")       // store 0 caches (epoch, 2)
	send(stores[1], "b1", "b2", "b3") // store 1 reads meta: seqs 3..5
	send(stores[0], "a3", "a4")       // store 0's cache says 2: mispredicted, resealed for 6, 7
	got := openTimeline(t, stores[0], opener, conv, plain)
	want := map[uint64]string{1: "hello a1", 2: "hello a2", 3: "hello b1", 4: "hello b2", 5: "hello b3", 6: "hello a3", 7: "hello a4"}
	for seq, body := range want {
		if got[seq] != body {
			t.Fatalf("seq %d opens to %q, want %q (all: %v)", seq, got[seq], body, got)
		}
	}
}

// racingSealer seals as its Sealer does, and before each body it seals
// lets another writer sequence one message of the conversation, as a
// second fanout process handling it at the same time would: the
// prediction the body is sealed for is then stale.
type racingSealer struct {
	Sealer
	t     *testing.T
	other *Store
	races int // seals that still race; -1: every one
	raced int
}

func (r *racingSealer) SealBody(ctx context.Context, conv string, epoch, seq uint64, m *schemas.Message) (*schemas.Message, error) {
	if r.races != 0 {
		r.races--
		r.raced++
		other := directMsg(conv, fmt.Sprint("other-", r.raced), "bob", "alice")
		if _, err := r.other.Sequence(ctx, conv, []*schemas.Message{other}, nil, seqTestNow); err != nil {
			r.t.Fatal(err)
		}
	}
	return r.Sealer.SealBody(ctx, conv, epoch, seq, m)
}

// Sealed sequencing retries a conversation another writer keeps moving a
// bounded number of times, then gives the records up as raced (nothing
// of them stored) instead of failing the call, which would be retried
// without end; a race that ends is sequenced.
func TestSealedSequencingGivesUpOnAWriterThatKeepsRacingIt(t *testing.T) {
	cases := []struct {
		name  string
		races int
		want  SeqStatus
	}{
		{"a race that ends after two seals", 2, SeqNew},
		{"a writer that races every seal", -1, SeqRaced},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			stores, opener := sealedStores(t, 2)
			ctx, conv := context.Background(), "raced"
			racer := &racingSealer{Sealer: stores[0].cfg.Sealer, t: t, other: stores[1], races: tc.races}
			stores[0].cfg.Sealer = racer
			mine := []*schemas.Message{directMsg(conv, "mine-1", "alice", "bob"), directMsg(conv, "mine-2", "alice", "bob")}
			res, err := stores[0].Sequence(ctx, conv, mine, nil, seqTestNow)
			if err != nil {
				t.Fatalf("Sequence failed (%v): a race is not a store that is down", err)
			}
			for i, it := range res.Items {
				if it.Status != tc.want {
					t.Fatalf("record %d: status %d, want %d", i, it.Status, tc.want)
				}
				if tc.want == SeqRaced && (!errors.Is(it.Reason, ErrSealRaced) || it.Sequenced != nil) {
					t.Fatalf("record %d: reason %v, sequenced %v; want ErrSealRaced and nothing", i, it.Reason, it.Sequenced)
				}
			}
			if tc.races < 0 && (racer.raced < 2 || racer.raced > maxSealMisses*len(mine)) {
				t.Fatalf("the other writer raced %d seals; want the tries bounded by %d calls", racer.raced, maxSealMisses)
			}
			stored := openTimeline(t, stores[1], opener, conv, nil)
			ours := 0
			for _, body := range stored {
				if strings.HasPrefix(body, "hello mine-") {
					ours++
				}
			}
			if want := map[SeqStatus]int{SeqNew: 2, SeqRaced: 0}[tc.want]; ours != want || len(stored) != racer.raced+want {
				t.Fatalf("timeline holds %d of ours and %d in all; want %d of ours and the other's %d", ours, len(stored), want, racer.raced)
			}
		})
	}
}

// breakingSealer seals as its Sealer does; the second time it seals the
// record named, it first sets the conversation's timeline to a string, so
// that the next call fails for good.
type breakingSealer struct {
	Sealer
	t      *testing.T
	s      *Store
	record string
	seals  int
}

func (b *breakingSealer) SealBody(ctx context.Context, conv string, epoch, seq uint64, m *schemas.Message) (*schemas.Message, error) {
	if m.GetClientMsgId() == b.record {
		if b.seals++; b.seals == 2 {
			tl := b.s.keys.Timeline(conv)
			if err := b.s.rdb.Del(ctx, tl).Err(); err != nil {
				b.t.Fatal(err)
			}
			if err := b.s.rdb.Set(ctx, tl, "someone's string", 0).Err(); err != nil {
				b.t.Fatal(err)
			}
		}
	}
	return b.Sealer.SealBody(ctx, conv, epoch, seq, m)
}

// A sealed batch sequenced in two calls (a duplicate in it made the first
// stop) whose second call fails for good keeps what the first gave: the
// first record's seq stands, and only the record of the failed call is
// given up, with the error (the caller dead-letters it alone). Before,
// the whole batch was failed as not sequenced, seqs and all.
func TestASealedBatchFailingForGoodAfterItsFirstCallKeepsTheSeqsItGave(t *testing.T) {
	stores, _ := sealedStores(t, 1)
	s, ctx, conv := stores[0], context.Background(), "split"
	if _, err := s.Sequence(ctx, conv, []*schemas.Message{directMsg(conv, "old-1", "alice", "bob")}, nil, seqTestNow); err != nil {
		t.Fatal(err)
	}
	s.cfg.Sealer = &breakingSealer{Sealer: s.cfg.Sealer, t: t, s: s, record: "mine-2"}
	batch := []*schemas.Message{directMsg(conv, "mine-1", "alice", "bob"), directMsg(conv, "old-1", "alice", "bob"),
		directMsg(conv, "mine-2", "alice", "bob")}
	res, err := s.Sequence(ctx, conv, batch, nil, seqTestNow)
	if err != nil {
		t.Fatalf("Sequence failed whole (%v) though its first call sequenced mine-1", err)
	}
	want := []struct {
		status SeqStatus
		seq    uint64
	}{{SeqNew, 2}, {SeqDuplicate, 1}, {SeqFailed, 0}}
	for i, w := range want {
		if it := res.Items[i]; it.Status != w.status || it.Seq != w.seq {
			t.Fatalf("record %d: status %d seq %d, want %d seq %d", i, it.Status, it.Seq, w.status, w.seq)
		}
	}
	if r := res.Items[2].Reason; !Permanent(r) || !strings.Contains(r.Error(), "WRONGTYPE") {
		t.Fatalf("the given-up record's reason %v, want the call's WRONGTYPE", r)
	}
}
