package verify

import (
	"context"

	"github.com/offlinebox/offlinebox/redisstore"
	"github.com/offlinebox/offlinebox/schemas"
)

// checkConv checks one conversation: a contiguous timeline with a body
// for every seq, the member count, a group's roles, the @all references.
func (r *run) checkConv(ctx context.Context, conv string) error {
	r.rep.Conversations++
	for from := uint64(0); ; {
		c, err := r.main.CheckTimeline(ctx, conv, from, r.cfg.Chunk)
		if err != nil {
			return err
		}
		if c.Problem != "" {
			r.problem(KindTimeline, conv, "", "seq %d: %s (counter %d, floor %d)", c.BadSeq, c.Problem, c.Seq, c.First)
			break
		}
		if c.Next > c.Seq {
			break
		}
		from = c.Next
	}
	heads, err := r.main.ConvHeads(ctx, []string{conv})
	if err != nil {
		return err
	}
	head := heads[conv]
	if !head.Exists {
		return nil // gone since the scan saw it
	}
	if head.Members != head.NMem {
		r.problem(KindMembers, conv, "", "meta counts %d members, the member set holds %d", head.NMem, head.Members)
	}
	if head.Type == schemas.ConvType_CONV_TYPE_GROUP {
		if err := r.checkRoles(ctx, conv, head); err != nil {
			return err
		}
	}
	return r.checkMentionAll(ctx, conv)
}

// checkRoles checks a group's authority: one owner while it has members,
// and roles held by members only.
func (r *run) checkRoles(ctx context.Context, conv string, head redisstore.ConvHead) error {
	roles, strangers, err := r.main.GroupRoles(ctx, conv)
	if err != nil {
		return err
	}
	owners := 0
	for _, role := range roles {
		if role == "o" {
			owners++
		}
	}
	switch {
	case owners > 1:
		r.problem(KindRoles, conv, "", "%d owners", owners)
	case owners == 0 && head.Members > 0:
		r.problem(KindRoles, conv, "", "%d members and no owner: nobody can add or remove anyone", head.Members)
	}
	for _, u := range strangers {
		r.problem(KindRoles, conv, u, "holds role %s but is not a member", roles[u])
	}
	return nil
}

// checkMentionAll checks that every @all reference of a large group points
// at a seq that was assigned and, while in the timeline, at a message to
// all.
func (r *run) checkMentionAll(ctx context.Context, conv string) error {
	seqs, err := r.main.ReadMentionAll(ctx, conv)
	if err != nil {
		return err
	}
	for _, seq := range seqs {
		r.rep.Mentions++
		head, entries, err := r.main.TimelineEntries(ctx, conv, seq, seq)
		if err != nil {
			return err
		}
		switch {
		case seq > head.Seq:
			r.problem(KindMention, conv, "", "@all reference to seq %d, above the counter %d", seq, head.Seq)
		case len(entries) == 1 && !entries[0].GetMessage().GetMentionAll():
			r.problem(KindMention, conv, "", "@all reference to seq %d, which does not mention all", seq)
		}
	}
	return nil
}

// checkOrphanTimeline reports a timeline without the meta that says where
// it starts.
func (r *run) checkOrphanTimeline(ctx context.Context, conv string) error {
	heads, err := r.main.ConvHeads(ctx, []string{conv})
	if err != nil {
		return err
	}
	if !heads[conv].Exists {
		r.problem(KindTimeline, conv, "", "a timeline without meta: its seqs cannot be placed")
	}
	return nil
}

// mentions reports whether a message mentions user.
func mentions(m *schemas.Message, user string) bool {
	if m.GetMentionAll() {
		return true
	}
	for _, u := range m.GetMentions() {
		if u == user {
			return true
		}
	}
	return false
}

// checkHeld reports a conversation a restore held: none of its records is
// sequenced until it is rebuilt.
func (r *run) checkHeld(ctx context.Context, conv string) error {
	why, held, err := r.main.HeldReason(ctx, conv)
	if err != nil || !held {
		return err
	}
	r.problem(KindHeld, conv, "", "held for a rebuild (offlinebox rebuild -conv %s): %s", conv, why)
	return nil
}
