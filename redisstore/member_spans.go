package redisstore

import (
	"strconv"
	"strings"
)

// MemberSpan is a stretch of a conversation a user belonged to: they read
// the seqs s with Joined < s < Left. Left is 0 while they are a member.
type MemberSpan struct {
	Joined, Left uint64
}

// Reads reports whether the span covers seq.
func (sp MemberSpan) Reads(seq uint64) bool {
	return seq > sp.Joined && (sp.Left == 0 || seq < sp.Left)
}

// ParsePastSpans reads a `past` value: the ended spans "JOINED-LEFT,..."
// (see schemas/redis-keys.md), oldest first. Malformed spans are skipped.
func ParsePastSpans(v string) []MemberSpan {
	if v == "" {
		return nil
	}
	var out []MemberSpan
	for _, part := range strings.Split(v, ",") {
		j, l, ok := strings.Cut(part, "-")
		jn, err1 := strconv.ParseUint(j, 10, 64)
		ln, err2 := strconv.ParseUint(l, 10, 64)
		if ok && err1 == nil && err2 == nil && ln > jn {
			out = append(out, MemberSpan{Joined: jn, Left: ln})
		}
	}
	return out
}
