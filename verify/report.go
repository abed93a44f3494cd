package verify

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
)

// Kinds of Problem.
const (
	KindTimeline = "timeline"
	KindMembers  = "members"
	KindRoles    = "roles"
	KindInbox    = "inbox"
	KindUnread   = "unread"
	KindMention  = "mention"
	KindCursor   = "cursor"
	KindDevices  = "devices"
	// KindListIndex: the list's large-group set or mention index differs
	// from the inbox or lane it indexes.
	KindListIndex = "list-index"
	// KindHeld: a restore could not put the conversation back; sequencing
	// refuses it until a rebuild (redisstore.Keys.Held).
	KindHeld = "held"
)

// Problem is one broken invariant.
type Problem struct {
	// Kind names the invariant (Kind* constants).
	Kind string
	// Conv and User say where ("" when not about one).
	Conv, User string
	Detail     string
}

func (p Problem) String() string {
	var where []string
	if p.User != "" {
		where = append(where, "user "+p.User)
	}
	if p.Conv != "" {
		where = append(where, "conv "+p.Conv)
	}
	return fmt.Sprintf("%-8s %s: %s", p.Kind, strings.Join(where, ", "), p.Detail)
}

// Report is what a check found.
type Report struct {
	// Problems found, at most Config.MaxProblems of them; Dropped counts
	// the rest.
	Problems []Problem
	Dropped  int
	// What was checked.
	Conversations int // conversations (meta keys)
	Users         int // users with an inbox index
	Mentions      int // mention references (user lanes and @all)
	Cursors       int // device cursors (one per device and conversation)
}

// OK reports whether every invariant holds.
func (r *Report) OK() bool { return len(r.Problems) == 0 && r.Dropped == 0 }

func (r *Report) add(max int, p Problem) {
	if len(r.Problems) >= max {
		r.Dropped++
		return
	}
	r.Problems = append(r.Problems, p)
}

// String renders the report for a person: what was checked, then each
// problem, sorted by kind and place.
func (r *Report) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "checked %d conversations, %d users, %d mention references, %d device cursors\n",
		r.Conversations, r.Users, r.Mentions, r.Cursors)
	if r.OK() {
		b.WriteString("OK: every invariant holds\n")
		return b.String()
	}
	fmt.Fprintf(&b, "FAILED: %d problems\n", len(r.Problems)+r.Dropped)
	ps := slices.Clone(r.Problems)
	slices.SortFunc(ps, func(a, b Problem) int {
		return cmp.Or(cmp.Compare(a.Kind, b.Kind), cmp.Compare(a.Conv, b.Conv), cmp.Compare(a.User, b.User), cmp.Compare(a.Detail, b.Detail))
	})
	for _, p := range ps {
		b.WriteString("  " + p.String() + "\n")
	}
	if r.Dropped > 0 {
		fmt.Fprintf(&b, "  ... and %d more\n", r.Dropped)
	}
	return b.String()
}
