package verify

import (
	"context"
	"slices"

	"github.com/offlinebox/offlinebox/redisstore"
)

// checkListIndex checks a user's list indexes against what they index:
// the large-group list against the inbox's C:t = L fields, the mention
// index against the lane. An index still being built is not compared.
func (r *run) checkListIndex(ctx context.Context, st *redisstore.Store, user string) error {
	ix, err := st.ReadListIndex(ctx, user)
	if err != nil || r.skip(st, ix.Moved) || !ix.Built {
		return err
	}
	for _, d := range setDiff(ix.InboxLarge, ix.Large) {
		r.problem(KindListIndex, d, user, "inbox form L, but not in the large-group list")
	}
	for _, d := range setDiff(ix.Large, ix.InboxLarge) {
		r.problem(KindListIndex, d, user, "in the large-group list, but the inbox form is not L")
	}
	for _, d := range setDiff(ix.Lane, ix.Index) {
		r.problem(KindListIndex, "", user, "mention %q is in the lane but not in the mention index", d)
	}
	for _, d := range setDiff(ix.Index, ix.Lane) {
		r.problem(KindListIndex, "", user, "mention %q is in the mention index but not in the lane", d)
	}
	return nil
}

// setDiff lists, sorted, the members of a that b lacks.
func setDiff(a, b []string) []string {
	in := make(map[string]bool, len(b))
	for _, x := range b {
		in[x] = true
	}
	var out []string
	for _, x := range a {
		if !in[x] {
			out = append(out, x)
		}
	}
	slices.Sort(out)
	return out
}
