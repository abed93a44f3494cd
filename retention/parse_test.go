package retention

import (
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestParseRefusesAMalformedFileNamingTheLine(t *testing.T) {
	cases := []struct {
		name, text string
		line       int
		says       string
	}{
		{"unknown field", "policies:\n  - name: a\n    match: {tag: x}\n    histroy: 30d\n", 4, "histroy"},
		{"unknown top-level field", "defaults:\n  inbox: 30d\npolicy: []\n", 3, "policy"},
		{"not YAML (the line the YAML parser names)", "policies:\n  - name: a\n    match: {tag: x\n", 2, "expected"},
		{"a key twice", "defaults:\n  inbox: 30d\n  inbox: 40d\n", 3, "already defined"},
		{"bad duration", "policies:\n  - name: a\n    match: {tag: x}\n    history: 30 days\n", 4, "30 days"},
		{"inbox under the floor", "defaults:\n  inbox: 1d\n", 2, "least inbox window"},
		{"unknown conv type", "policies:\n  - name: a\n    match:\n      conv_type: channel\n    inbox: 30d\n", 4, "channel"},
		{"unknown kind", "policies:\n  - name: a\n    match:\n      kind: sticker\n    inbox: 30d\n", 4, "sticker"},
		{"conv and prefix", "policies:\n  - name: a\n    match:\n      conv: c1\n      conv_prefix: c\n    inbox: 30d\n", 5, "choose one"},
		{"content type and kind", "policies:\n  - name: a\n    match:\n      content_type: x/y\n      kind: message\n    inbox: 30d\n", 5, "choose one"},
		{"selects nothing", "policies:\n  - name: a\n    inbox: 30d\n", 2, "selects nothing"},
		{"sets nothing", "policies:\n  - name: a\n    match: {tag: x}\n", 2, "sets none"},
		{"no name", "policies:\n  - match: {tag: x}\n    inbox: 30d\n", 2, "no name"},
		{"duplicate name", "policies:\n  - name: a\n    match: {tag: x}\n    inbox: 30d\n  - name: a\n    match: {tag: y}\n    inbox: 30d\n", 5, "line 2"},
		{"same selectors twice", "policies:\n  - name: a\n    match: {tag: x}\n    inbox: 30d\n  - name: b\n    match: {tag: x}\n    history: 30d\n", 5, "line 2"},
		{"tag with a colon", "policies:\n  - name: a\n    match: {tag: \"a:b\"}\n    inbox: 30d\n", 3, "tag"},
		{"a list where a value goes", "policies:\n  - name: a\n    match: {tag: x}\n    inbox: [30d]\n", 4, "single value"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Parse("p.yaml", []byte(c.text))
			var pe *Error
			if err == nil {
				t.Fatal("accepted")
			}
			msg := err.Error()
			if errors.As(err, &pe) && pe.Line != 0 && pe.Line != c.line {
				t.Fatalf("line %d, want %d: %v", pe.Line, c.line, err)
			}
			if !strings.Contains(msg, "p.yaml") || !strings.Contains(msg, "line "+strconv.Itoa(c.line)) || !strings.Contains(msg, c.says) {
				t.Fatalf("error %q does not name p.yaml, line %d and %q", msg, c.line, c.says)
			}
		})
	}
}

func TestParseReadsDurationsDaysWeeksYearsAndNone(t *testing.T) {
	set, err := Parse("p.yaml", []byte(`defaults:
  inbox: 2w
  history: 1y
policies:
  - name: burn
    match: {conv_prefix: tmp-}
    history: none
  - name: hold
    match: {conv: legal-1}
    audit_hold: 36h
`))
	if err != nil {
		t.Fatal(err)
	}
	if set.DefaultInbox != 14*24*time.Hour || set.DefaultHistory.Keep != 365*24*time.Hour {
		t.Fatalf("defaults %s %s", set.DefaultInbox, set.DefaultHistory)
	}
	if len(set.Policies) != 2 || !set.Policies[0].History.None || set.Policies[1].AuditHold != 36*time.Hour || set.Policies[1].Line != 8 {
		t.Fatalf("policies %+v", set.Policies)
	}
}

func TestAnEmptyOrTruncatedFileIsRefused(t *testing.T) {
	for _, c := range []struct{ name, text string }{
		{"empty", ""},
		{"blank lines and a comment", "\n# retention\n\n"},
		{"truncated after defaults", "defaults:\n"},
		{"truncated after policies", "defaults:\n  inbox: 30d\npolicies:\n"},
		{"an empty list", "policies: []\n"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := Parse("p.yaml", []byte(c.text))
			if !errors.Is(err, ErrEmpty) || !strings.Contains(err.Error(), "p.yaml") {
				t.Fatalf("Parse said %v, want ErrEmpty naming the file", err)
			}
		})
	}
}

func TestTheDefaultsWrittenOutAreAFile(t *testing.T) {
	set, err := Parse("p.yaml", []byte("defaults:\n  inbox: 30d\n  history: 365d\n"))
	if err != nil {
		t.Fatal(err)
	}
	if set.DefaultInbox != DefaultInbox || set.DefaultHistory.Keep != DefaultHistory || len(set.Policies) != 0 || set.Digest == "" {
		t.Fatalf("%+v", set)
	}
}
