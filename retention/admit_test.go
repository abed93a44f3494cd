package retention

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/offlinebox/offlinebox/redisstore"
)

const auditPolicy = `defaults:
  inbox: 30d
  history: 365d
policies:
  - name: legal-hold
    match: {tag: legal}
    audit_hold: 7y
  - name: groups
    match: {conv_type: group}
    history: 400d
`

// memLedger is a Ledger in memory.
type memLedger struct {
	mu  sync.Mutex
	c   redisstore.ConfirmedRetention
	ok  bool
	err error
}

func (l *memLedger) ConfirmedRetention(context.Context) (redisstore.ConfirmedRetention, bool, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.c, l.ok, l.err
}

func (l *memLedger) ConfirmRetention(_ context.Context, c redisstore.ConfirmedRetention) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.err != nil {
		return l.err
	}
	l.c, l.ok = c, true
	return nil
}

// loaded is a Source of auditPolicy with a ledger, at a fixed clock.
func loaded(t *testing.T, now time.Time) (*Source, *memLedger, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "p.yaml")
	write(t, path, auditPolicy)
	src, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	src.now = func() time.Time { return now }
	l := &memLedger{}
	if err := src.Attach(context.Background(), l); err != nil {
		t.Fatal(err)
	}
	if l.c.How != "start" || l.c.Digest != src.Current().Digest {
		t.Fatalf("the first policy was not confirmed at start: %+v", l.c)
	}
	return src, l, path
}

func write(t *testing.T, path, text string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
}

func legalHold(s *Set) time.Duration {
	return s.Resolve(Subject{Conv: "c", Tag: "legal", ConvType: 1, Kind: 1}).Kept
}

func TestAReloadThatCouldDeleteIsRefusedAndThePolicyInForceStays(t *testing.T) {
	now := time.Date(2026, 12, 2, 13, 0, 0, 0, time.UTC)
	cases := []struct {
		name, text, reason string
	}{
		{"empty file", "", ReasonEmpty},
		{"truncated to defaults:", "defaults:\n", ReasonEmpty},
		{"truncated inside the policies", "defaults:\n  inbox: 30d\n  history: 365d\npolicies:\n  - name: legal-hold\n    match: {tag: legal}\n", ReasonInvalid},
		{"the hold dropped", "defaults:\n  inbox: 30d\n  history: 365d\npolicies:\n  - name: groups\n    match: {conv_type: group}\n    history: 400d\n", ReasonShrink},
		{"a history shortened", strings.Replace(auditPolicy, "400d", "90d", 1), ReasonShrink},
		{"an inbox shortened", strings.Replace(auditPolicy, "inbox: 30d", "inbox: 14d", 1), ReasonShrink},
		{"allow_shrink of last week", "allow_shrink: 2026-11-25\n" + strings.Replace(auditPolicy, "400d", "90d", 1), ReasonShrink},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			src, l, path := loaded(t, now)
			before := l.c
			write(t, path, c.text)
			if _, err := src.Reload(); err == nil {
				t.Fatal("reload accepted")
			}
			if got := legalHold(src.Current()); got != 7*365*day {
				t.Fatalf("the legal hold in force is %s, want 7y", FormatDuration(got))
			}
			if src.RefusedFor(c.reason) != 1 || src.Refused() != 1 {
				t.Fatalf("refused for %s: %d (all %d), want 1", c.reason, src.RefusedFor(c.reason), src.Refused())
			}
			if l.c.Digest != before.Digest {
				t.Fatal("a refused file was confirmed")
			}
		})
	}
}

func TestAShrinkIsAcceptedWhenTheFileOrTheLedgerConfirmsIt(t *testing.T) {
	now := time.Date(2026, 12, 2, 13, 0, 0, 0, time.UTC)
	shrunk := "defaults:\n  inbox: 30d\n  history: 365d\n"
	for _, c := range []struct{ name, text, how string }{
		{"allow_shrink today", "allow_shrink: 2026-12-02\n" + shrunk, "allow_shrink"},
		{"allow_shrink yesterday (UTC)", "allow_shrink: 2026-12-01\n" + shrunk, "allow_shrink"},
		{"confirmed by retention apply", shrunk, "apply"},
		{"a longer hold needs no confirmation", strings.Replace(auditPolicy, "7y", "10y", 1), "reload"},
	} {
		t.Run(c.name, func(t *testing.T) {
			src, l, path := loaded(t, now)
			write(t, path, c.text)
			if c.how == "apply" {
				set, err := Parse(path, []byte(c.text))
				if err != nil {
					t.Fatal(err)
				}
				_ = l.ConfirmRetention(context.Background(), redisstore.ConfirmedRetention{Policy: []byte(c.text),
					Digest: set.Digest, Source: path, How: "apply", At: now})
			}
			set, err := src.Reload()
			if err != nil {
				t.Fatal(err)
			}
			if src.Current() != set || l.c.Digest != set.Digest || l.c.How != c.how {
				t.Fatalf("in force %p (reloaded %p), confirmed %+v, want %s", src.Current(), set, l.c, c.how)
			}
		})
	}
}

func TestAStartWithAShorterFileThanTheConfirmedIsRefused(t *testing.T) {
	now := time.Date(2026, 12, 2, 13, 0, 0, 0, time.UTC)
	_, l, _ := loaded(t, now)
	path := filepath.Join(t.TempDir(), "short.yaml")
	write(t, path, "defaults:\n  inbox: 30d\n")
	src, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	src.now = func() time.Time { return now }
	var r *Refusal
	if err := src.Attach(context.Background(), l); !errors.As(err, &r) || r.Reason != ReasonShrink {
		t.Fatalf("attach said %v, want a shrink refusal", err)
	}
	if !strings.Contains(r.Error(), "legal-hold") {
		t.Fatalf("the refusal does not name the hold: %v", r)
	}
}

func TestALedgerThatCannotBeReadRefusesTheReload(t *testing.T) {
	src, l, path := loaded(t, time.Now())
	l.err = errors.New("redis down")
	write(t, path, strings.Replace(auditPolicy, "7y", "8y", 1))
	if _, err := src.Reload(); err == nil || src.RefusedFor(ReasonLedger) != 1 {
		t.Fatalf("reload said %v with the ledger down", err)
	}
}

func TestCompareNamesWhatGrowsShrinksAndTheHoldsDropped(t *testing.T) {
	old, err := Parse("old.yaml", []byte(auditPolicy))
	if err != nil {
		t.Fatal(err)
	}
	next, err := Parse("new.yaml", []byte("defaults:\n  inbox: 45d\n  history: 365d\npolicies:\n  - name: groups\n    match: {conv_type: group}\n    history: 200d\n"))
	if err != nil {
		t.Fatal(err)
	}
	c := Compare(old, next)
	var b strings.Builder
	if err := c.Write(&b); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{
		"holds dropped: 1\n  policy \"legal-hold\" (tag=legal, audit_hold 2555d) is gone",
		"tag legal, direct, message: kept in history 2555d -> 365d",
		"group, message: kept in history 400d -> 200d",
		"direct, message: inbox 30d -> 45d",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("the change lacks %q:\n%s", want, out)
		}
	}
	if !c.Shortens() || Compare(old, old).Shortens() || len(Compare(old, old).Grows) != 0 {
		t.Fatal("Shortens is wrong")
	}
}
