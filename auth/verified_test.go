package auth

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// A token verified once is taken from memory until it expires, and not a
// moment longer than the full check would take it; a token that differs
// in one byte is checked in full.
func TestAVerifiedTokenIsRememberedOnlyUntilItExpires(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	k, err := New(Config{Secret: testSecret, Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	tok, err := k.Mint("alice", "phone", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	// The signature's first character (its last may be padding bits only).
	sig := strings.LastIndexByte(tok, '.') + 1
	other := byte('A')
	if tok[sig] == 'A' {
		other = 'B'
	}
	tampered := tok[:sig] + string(other) + tok[sig+1:]
	steps := []struct {
		name    string
		at      time.Duration // after minting
		token   string
		accepts bool
	}{
		{"first use", 0, tok, true},
		{"again, from memory", 30 * time.Second, tok, true},
		{"tampered, just after the original was taken", 30 * time.Second, tampered, false},
		{"past its expiry, within the leeway: the full check", time.Minute + 10*time.Second, tok, true},
		{"past its expiry and the leeway", time.Minute + DefaultLeeway + time.Second, tok, false},
	}
	start := now
	for _, st := range steps {
		now = start.Add(st.at)
		id, err := k.Verify(st.token)
		if got := err == nil; got != st.accepts {
			t.Fatalf("%s: accepted %v (%v), want %v", st.name, got, err, st.accepts)
		}
		if st.accepts && (id.User != "alice" || id.Device != "phone") {
			t.Fatalf("%s: verified as %+v", st.name, id)
		}
	}
	if n := k.verified.len(); n != 1 {
		t.Fatalf("%d tokens remembered, want the one that verified", n)
	}
}

func TestTheVerifiedTokensStayWithinTheirBound(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	k, err := New(Config{Secret: testSecret, Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	for i := range maxVerifiedTokens + 50 {
		tok, err := k.Mint(fmt.Sprintf("u%d", i), "", time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := k.Verify(tok); err != nil {
			t.Fatal(err)
		}
		if n := k.verified.len(); n > maxVerifiedTokens {
			t.Fatalf("%d tokens remembered, more than %d", n, maxVerifiedTokens)
		}
	}
}
