package expiry

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/offlinebox/offlinebox/chstore"
	"github.com/offlinebox/offlinebox/internal/testenv"
	"github.com/offlinebox/offlinebox/redisstore"
	"github.com/offlinebox/offlinebox/redisstore/readpath"
	"github.com/offlinebox/offlinebox/retention"
	"github.com/offlinebox/offlinebox/schemas"
)

const policyFile = `defaults:
  inbox: 30d
  history: 365d
policies:
  - name: finance-audit
    match: {tag: finance}
    inbox: 60d
    history: 180d
  - name: scratch-burn
    match: {conv_prefix: "tmp-"}
    history: none
  - name: groups
    match: {conv_type: group}
    history: 30d
  - name: system-notices
    match: {content_type: system/notice}
    inbox: 7d
    history: 7d
`

// policyFixture is a Redis store and a ClickHouse history fed the same
// sequenced records, the way fanout and the history worker feed them.
type policyFixture struct {
	store *redisstore.Store
	ch    *chstore.Store
	now   time.Time
	epoch map[string]uint64
}

func newPolicyFixture(t *testing.T) *policyFixture {
	t.Helper()
	rdb, prefix := testenv.Redis(t)
	s, err := redisstore.New(rdb, redisstore.Config{Prefix: prefix})
	if err != nil {
		t.Fatal(err)
	}
	ch, _ := testenv.History(t)
	return &policyFixture{store: s, ch: ch, now: time.Now().Truncate(time.Millisecond), epoch: map[string]uint64{}}
}

// send sequences one record written age before now and stores it in
// history; it returns its seq.
func (f *policyFixture) send(t *testing.T, m *schemas.Message, age time.Duration) uint64 {
	t.Helper()
	ctx := context.Background()
	m.ClientMsgId = fmt.Sprintf("%s-%d-%s", m.ConvId, age, m.ContentType)
	m.Sender = "alice"
	if m.Kind == schemas.Kind_KIND_UNSPECIFIED {
		m.Kind = schemas.Kind_KIND_MESSAGE
	}
	res, err := f.store.Sequence(ctx, m.ConvId, []*schemas.Message{m}, nil, f.now.Add(-age).UnixMilli())
	if err != nil || res.Items[0].Status != redisstore.SeqNew {
		t.Fatalf("sequence %s: %+v (err %v)", m.ConvId, res, err)
	}
	f.epoch[m.ConvId] = res.Epoch
	if err := f.ch.InsertBatch(ctx, []*schemas.Sequenced{res.Items[0].Sequenced}); err != nil {
		t.Fatal(err)
	}
	return res.Items[0].Seq
}

// seqs lists the seqs Redis holds of conv, and the seqs history holds.
func (f *policyFixture) seqs(t *testing.T, conv string) (inRedis, inHistory []uint64) {
	t.Helper()
	ctx := context.Background()
	_, raw, err := f.store.TimelineEntries(ctx, conv, 1, 100)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range raw {
		inRedis = append(inRedis, e.Seq)
	}
	rows, err := f.ch.Range(ctx, conv, f.epoch[conv], 1, 100)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rows {
		inHistory = append(inHistory, r.Seq)
	}
	return inRedis, inHistory
}

// expireAt runs a full Redis sweep and the history trim at now, and waits
// for the delete mutations to finish.
func (f *policyFixture) expireAt(t *testing.T, w *Worker) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := w.SweepOnce(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := w.DropHistory(ctx); err != nil {
		t.Fatal(err)
	}
	for {
		n, err := f.ch.PendingMutations(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if n == 0 {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("%d mutations still running", n)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

func writePolicy(t *testing.T, path, text string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
}

func TestPolicyFileRemovesExactlyTheMessagesPastTheirPolicyFromRedisAndHistory(t *testing.T) {
	f := newPolicyFixture(t)
	path := filepath.Join(t.TempDir(), "retention.yaml")
	writePolicy(t, path, policyFile)
	src, err := retention.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	g, d := schemas.ConvType_CONV_TYPE_GROUP, schemas.ConvType_CONV_TYPE_DIRECT
	join := func(conv, tag string) *schemas.Message {
		return &schemas.Message{ConvId: conv, ConvType: g, Kind: schemas.Kind_KIND_MEMBER_JOIN, Recipients: []string{"alice", "bob"}, Tag: tag}
	}
	text := func(conv string, ct schemas.ConvType) *schemas.Message {
		m := &schemas.Message{ConvId: conv, ConvType: ct, ContentType: "text/plain", Body: []byte("hi")}
		if ct == d {
			m.Recipients = []string{"bob"}
		}
		return m
	}
	notice := func(conv string, ct schemas.ConvType) *schemas.Message {
		m := text(conv, ct)
		m.ContentType = "system/notice"
		return m
	}
	// Each conversation: at 40 days a text and a notice (after the group's
	// join), a notice at 9 days, a text at 5 days.
	for _, c := range []struct {
		conv string
		typ  schemas.ConvType
		tag  string
	}{{"fin-1", g, "finance"}, {"grp-1", g, ""}, {"tmp-1", d, ""}, {"dm-1", d, ""}} {
		if c.typ == g {
			f.send(t, join(c.conv, c.tag), 40*day)
		}
		f.send(t, text(c.conv, c.typ), 40*day)
		f.send(t, notice(c.conv, c.typ), 40*day)
		f.send(t, notice(c.conv, c.typ), 9*day)
		f.send(t, text(c.conv, c.typ), 5*day)
	}
	clock := f.now
	w, err := New(Config{Policies: src, Clock: func() time.Time { return clock }}, f.store, f.ch)
	if err != nil {
		t.Fatal(err)
	}
	f.expireAt(t, w)
	// fin-1 (seqs join 1, text 2, notice 3, notice 4, text 5): the inbox
	// keeps 60 days of its ordinary records, and the head (its join) holds
	// the rest; history keeps them 180 days and notices 7.
	// grp-1: inbox 30 days, notices 7; history 30 days (groups).
	// tmp-1 (text 1, notice 2, notice 3, text 4): burnt when the inbox
	// lets them go. dm-1: history keeps its text a year.
	want := []struct {
		conv             string
		redis, inHistory []uint64
	}{
		{"fin-1", []uint64{1, 2, 3, 4, 5}, []uint64{1, 2, 5}},
		{"grp-1", []uint64{5}, []uint64{5}},
		{"tmp-1", []uint64{4}, []uint64{4}},
		{"dm-1", []uint64{4}, []uint64{1, 4}},
	}
	for _, c := range want {
		r, h := f.seqs(t, c.conv)
		if !slices.Equal(r, c.redis) || !slices.Equal(h, c.inHistory) {
			t.Errorf("%s at 40 days: Redis %v history %v; want Redis %v history %v", c.conv, r, h, c.redis, c.inHistory)
		}
	}
	// A device whose cursor is below what the inbox still holds learns it
	// is incomplete; one above it does not.
	for _, c := range []struct {
		after      uint64
		incomplete bool
	}{{0, true}, {4, false}} {
		p, err := readpath.New(redisstore.NewInboxRouter(f.store, nil, 0)).ReadPage(context.Background(), "alice", "grp-1", readpath.PageQuery{After: c.after, HasAfter: true, Limit: 10})
		if err != nil {
			t.Fatal(err)
		}
		if p.Incomplete != c.incomplete {
			t.Errorf("grp-1 read after %d: incomplete %v, want %v", c.after, p.Incomplete, c.incomplete)
		}
	}
	// 200 days on from the first records: the finance department's 180
	// days have passed for its first records, not for its last; dm-1's
	// year has not.
	clock = f.now.Add(160 * day)
	f.expireAt(t, w)
	for _, c := range []struct {
		conv             string
		redis, inHistory []uint64
	}{
		{"fin-1", nil, []uint64{5}},
		{"grp-1", nil, nil},
		{"tmp-1", nil, nil},
		{"dm-1", nil, []uint64{1, 4}},
	} {
		r, h := f.seqs(t, c.conv)
		if !slices.Equal(r, c.redis) || !slices.Equal(h, c.inHistory) {
			t.Errorf("%s at 200 days: Redis %v history %v; want Redis %v history %v", c.conv, r, h, c.redis, c.inHistory)
		}
	}
}

func TestAChangedPolicyFileTakesEffectWithoutARestart(t *testing.T) {
	f := newPolicyFixture(t)
	path := filepath.Join(t.TempDir(), "retention.yaml")
	writePolicy(t, path, "policies:\n  - name: scratch\n    match: {conv_prefix: tmp-}\n    inbox: 60d\n")
	src, err := retention.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	watched := make(chan struct{})
	go func() { defer close(watched); src.Watch(ctx, 10*time.Millisecond, discardLogger()) }()
	defer func() { cancel(); <-watched }()
	d := schemas.ConvType_CONV_TYPE_DIRECT
	for _, age := range []time.Duration{40 * day, 5 * day} {
		f.send(t, &schemas.Message{ConvId: "tmp-1", ConvType: d, Recipients: []string{"bob"}, ContentType: "text/plain"}, age)
	}
	w, err := New(Config{Policies: src, Clock: func() time.Time { return f.now }, Logger: discardLogger()}, f.store, f.ch)
	if err != nil {
		t.Fatal(err)
	}
	f.expireAt(t, w)
	if r, h := f.seqs(t, "tmp-1"); !slices.Equal(r, []uint64{1, 2}) || !slices.Equal(h, []uint64{1, 2}) {
		t.Fatalf("under a 60-day inbox: Redis %v history %v, want both seqs in both", r, h)
	}
	// A refused file leaves the policy in force.
	writePolicy(t, path, "policies:\n  - name: scratch\n    match: {conv_prefix: tmp-}\n    inbox: 1d\n")
	for deadline := time.Now().Add(10 * time.Second); src.Refused() == 0; {
		if time.Now().After(deadline) {
			t.Fatal("the refused file was not looked at")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if got := src.Current().Policies[0].Inbox; got == nil || *got != 60*day {
		t.Fatalf("a refused file replaced the policy: inbox %v", got)
	}
	// A shorter one takes effect when the file confirms the shrink.
	before := src.Reloads()
	writePolicy(t, path, "allow_shrink: "+time.Now().UTC().Format(time.DateOnly)+
		"\npolicies:\n  - name: scratch\n    match: {conv_prefix: tmp-}\n    history: none\n")
	for deadline := time.Now().Add(10 * time.Second); src.Reloads() == before; {
		if time.Now().After(deadline) {
			t.Fatal("the changed file was not picked up")
		}
		time.Sleep(10 * time.Millisecond)
	}
	f.expireAt(t, w)
	if r, h := f.seqs(t, "tmp-1"); !slices.Equal(r, []uint64{2}) || !slices.Equal(h, []uint64{2}) {
		t.Fatalf("after the reload (30-day inbox, history none): Redis %v history %v, want [2] in both", r, h)
	}
}

func TestSweepChoosesTheInboxWindowByTheTagTheCreatingRecordSet(t *testing.T) {
	f := newPolicyFixture(t)
	set, err := retention.Parse("p.yaml", []byte("policies:\n  - name: hr\n    match: {tag: hr}\n    inbox: 90d\n"))
	if err != nil {
		t.Fatal(err)
	}
	g := schemas.ConvType_CONV_TYPE_GROUP
	for _, c := range []struct{ conv, tag string }{{"g-hr", "hr"}, {"g-other", ""}} {
		f.send(t, &schemas.Message{ConvId: c.conv, ConvType: g, Kind: schemas.Kind_KIND_MEMBER_JOIN, Recipients: []string{"alice"}, Tag: c.tag}, 40*day)
		f.send(t, &schemas.Message{ConvId: c.conv, ConvType: g, ContentType: "text/plain"}, 40*day)
	}
	info, ok, err := f.store.ConvRetentionInfo(context.Background(), "g-hr")
	if err != nil || !ok || info.Tag != "hr" || info.Type != g {
		t.Fatalf("g-hr meta: %+v ok %v err %v; want tag hr", info, ok, err)
	}
	w, err := New(Config{Policies: retention.Fixed(set), Clock: func() time.Time { return f.now }, Logger: discardLogger()}, f.store, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.SweepOnce(context.Background()); err != nil {
		t.Fatal(err)
	}
	if r, _ := f.seqs(t, "g-hr"); !slices.Equal(r, []uint64{1, 2}) {
		t.Fatalf("g-hr (90-day inbox) holds %v, want 1 2", r)
	}
	if r, _ := f.seqs(t, "g-other"); len(r) != 0 {
		t.Fatalf("g-other (30-day inbox) holds %v, want nothing", r)
	}
}

func discardLogger() *slog.Logger { return slog.New(slog.DiscardHandler) }
