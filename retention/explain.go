package retention

import (
	"fmt"
	"io"
	"strings"

	"github.com/offlinebox/offlinebox/schemas"
)

// Conversation is what Explain is told about a conversation, and where it
// was learnt ("redis", "clickhouse", "flags").
type Conversation struct {
	ID    string
	Tag   string
	Type  schemas.ConvType
	Found string
}

// Explain writes which policy applies to the conversation's messages and
// why: for its ordinary messages, then for every content type and kind a
// policy names that changes something for them.
func (s *Set) Explain(w io.Writer, c Conversation) error {
	var b strings.Builder
	typ := convTypeNames[c.Type]
	if typ == "" {
		typ = "unknown type"
	}
	tag := "no tag"
	if c.Tag != "" {
		tag = fmt.Sprintf("tag %q", c.Tag)
	}
	fmt.Fprintf(&b, "conversation %s: %s, %s (from %s)\n", c.ID, typ, tag, c.Found)
	fmt.Fprintf(&b, "policy file: %s (%d policies)\n", s.Source, len(s.Policies))
	base := Subject{Conv: c.ID, Tag: c.Tag, ConvType: c.Type}
	writeDecision(&b, "ordinary messages", s.Resolve(base))
	seen := map[string]bool{}
	for _, p := range s.Policies {
		sub, label := base, ""
		switch {
		case p.Match.ContentType != "":
			sub.ContentType, label = p.Match.ContentType, "content_type "+p.Match.ContentType
		case p.Match.Kind != schemas.Kind_KIND_UNSPECIFIED:
			sub.Kind, label = p.Match.Kind, "kind "+kindNames[p.Match.Kind]
		default:
			continue
		}
		if seen[label] {
			continue
		}
		seen[label] = true
		d := s.Resolve(sub)
		if len(d.Matching) == 0 || d.Matching[0].Match.messageLevel() == 0 {
			continue // no message-level policy matches this conversation
		}
		writeDecision(&b, label, d)
	}
	b.WriteString("rule: the most specific matching policy sets each value (content_type, then kind, then none;\n" +
		"      conv, then the longest conv_prefix; tag; conv_type); the longest audit_hold of all matches is a floor.\n")
	_, err := io.WriteString(w, b.String())
	return err
}

func writeDecision(b *strings.Builder, label string, d Decision) {
	fmt.Fprintf(b, "%s:\n", label)
	fmt.Fprintf(b, "  inbox    %-6s from %s\n", FormatDuration(d.Inbox), from(d, d.InboxFrom))
	fmt.Fprintf(b, "  history  %-6s from %s\n", d.History, from(d, d.HistoryFrom))
	if d.Hold > 0 {
		fmt.Fprintf(b, "  hold     %-6s from %s\n", FormatDuration(d.Hold), from(d, d.HoldFrom))
	}
	note := ""
	if d.History.None && d.Kept == d.Inbox {
		note = " (history none: burnt when it leaves the inbox)"
	} else if d.Hold > 0 && d.Kept == d.Hold {
		note = " (the audit hold outlasts the history retention)"
	}
	fmt.Fprintf(b, "  kept in history %s after it was written%s\n", FormatDuration(d.Kept), note)
	if len(d.Matching) == 0 {
		fmt.Fprintf(b, "  matching policies: none\n")
		return
	}
	fmt.Fprintf(b, "  matching policies, most specific first:\n")
	for _, p := range d.Matching {
		fmt.Fprintf(b, "    %s\n", p.Describe())
	}
}

func from(d Decision, name string) string {
	for _, p := range d.Matching {
		if p.Name == name && p.Line > 0 {
			return fmt.Sprintf("policy %q (line %d)", p.Name, p.Line)
		}
		if p.Name == name {
			return fmt.Sprintf("built-in %q", p.Name)
		}
	}
	return name
}
