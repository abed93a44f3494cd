package retention

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/offlinebox/offlinebox/schemas"
)

// Delta is one kept time that a new Set changes for the messages Where
// names: what (inbox, history kept, hold), from Old to New.
type Delta struct {
	Where    string
	What     string
	Old, New time.Duration
}

func (d Delta) String() string {
	return fmt.Sprintf("%s: %s %s -> %s", d.Where, d.What, FormatDuration(d.Old), FormatDuration(d.New))
}

// Change is what putting a new Set in force instead of an old one changes:
// the kept times that grow and shrink, and the audit holds it drops or
// shortens (each policy by name).
type Change struct {
	Grows, Shrinks []Delta
	HoldsDropped   []string
}

// Shortens reports whether the change shortens anything kept or drops a
// hold: a reload that needs the operator's confirmation.
func (c Change) Shortens() bool { return len(c.Shrinks) > 0 || len(c.HoldsDropped) > 0 }

// Summary is the change in one line, for logs.
func (c Change) Summary(limit int) string {
	parts := append([]string(nil), c.HoldsDropped...)
	for _, d := range c.Shrinks {
		parts = append(parts, d.String())
	}
	if len(parts) > limit {
		parts = append(parts[:limit], fmt.Sprintf("and %d more", len(parts)-limit))
	}
	return strings.Join(parts, "; ")
}

// Write lists the change for an operator.
func (c Change) Write(w io.Writer) error {
	var b strings.Builder
	section := func(title string, lines []string) {
		fmt.Fprintf(&b, "%s: %d\n", title, len(lines))
		for _, l := range lines {
			fmt.Fprintf(&b, "  %s\n", l)
		}
	}
	str := func(ds []Delta) []string {
		out := make([]string, len(ds))
		for i, d := range ds {
			out[i] = d.String()
		}
		return out
	}
	section("holds dropped", c.HoldsDropped)
	section("kept times that shrink", str(c.Shrinks))
	section("kept times that grow", str(c.Grows))
	_, err := io.WriteString(w, b.String())
	return err
}

// Compare lists what putting next in force instead of old changes, for
// every message any selector of either Set names: each conversation id,
// prefix and tag either names (and none of them), each conversation type,
// each kind and content type. A message whose inbox window, kept time in
// history or audit hold is shorter under next is a shrink.
func Compare(old, next *Set) Change {
	var c Change
	seen := map[string]bool{}
	for _, sub := range subjects(old, next) {
		a, b := old.Resolve(sub), next.Resolve(sub)
		where := describe(sub)
		for _, d := range []Delta{
			{Where: where, What: "inbox", Old: a.Inbox, New: b.Inbox},
			{Where: where, What: "kept in history", Old: a.Kept, New: b.Kept},
			{Where: where, What: "audit hold", Old: a.Hold, New: b.Hold},
		} {
			if d.Old == d.New || seen[d.String()] {
				continue
			}
			seen[d.String()] = true
			if d.New < d.Old {
				c.Shrinks = append(c.Shrinks, d)
			} else {
				c.Grows = append(c.Grows, d)
			}
		}
	}
	for _, p := range old.Policies {
		if p.AuditHold == 0 {
			continue
		}
		i := slices.IndexFunc(next.Policies, func(q Policy) bool { return q.Name == p.Name })
		switch {
		case i < 0:
			c.HoldsDropped = append(c.HoldsDropped, fmt.Sprintf("policy %q (%s, audit_hold %s) is gone", p.Name, p.Match, FormatDuration(p.AuditHold)))
		case next.Policies[i].AuditHold < p.AuditHold:
			c.HoldsDropped = append(c.HoldsDropped, fmt.Sprintf("policy %q audit_hold %s -> %s", p.Name,
				FormatDuration(p.AuditHold), FormatDuration(next.Policies[i].AuditHold)))
		}
	}
	return c
}

// subjects are the messages Compare looks at: one for every combination
// of the values the two Sets' selectors name, and of none of them.
func subjects(sets ...*Set) []Subject {
	convs, tags, cts := []string{"\x00other"}, []string{""}, []string{""}
	for _, s := range sets {
		for _, p := range s.Policies {
			m := p.Match
			for _, c := range []string{m.Conv, m.ConvPrefix} {
				if c != "" && !slices.Contains(convs, c) {
					convs = append(convs, c)
				}
			}
			if m.Tag != "" && !slices.Contains(tags, m.Tag) {
				tags = append(tags, m.Tag)
			}
			if m.ContentType != "" && !slices.Contains(cts, m.ContentType) {
				cts = append(cts, m.ContentType)
			}
		}
	}
	var out []Subject
	for _, conv := range convs {
		for _, tag := range tags {
			for _, t := range []schemas.ConvType{schemas.ConvType_CONV_TYPE_DIRECT, schemas.ConvType_CONV_TYPE_GROUP} {
				for _, k := range []schemas.Kind{schemas.Kind_KIND_MESSAGE, schemas.Kind_KIND_MEMBER_JOIN, schemas.Kind_KIND_MEMBER_LEAVE} {
					for _, ct := range cts {
						out = append(out, Subject{Conv: conv, Tag: tag, ConvType: t, Kind: k, ContentType: ct})
					}
				}
			}
		}
	}
	return out
}

// describe names a subject as the selectors would.
func describe(sub Subject) string {
	parts := []string{}
	if sub.Conv != "\x00other" {
		parts = append(parts, "conv "+sub.Conv)
	}
	if sub.Tag != "" {
		parts = append(parts, "tag "+sub.Tag)
	}
	parts = append(parts, convTypeNames[sub.ConvType], kindNames[sub.Kind])
	if sub.ContentType != "" {
		parts = append(parts, "content_type "+sub.ContentType)
	}
	return strings.Join(parts, ", ")
}
