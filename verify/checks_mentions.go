package verify

import (
	"context"

	"github.com/offlinebox/offlinebox/redisstore"
)

// laneSet is a user's mention lane, read with their inbox.
type laneSet map[string]bool

func newLaneSet(in redisstore.UserInbox) laneSet {
	ls := make(laneSet, len(in.Lane))
	for _, m := range in.Lane {
		ls[m] = true
	}
	return ls
}

// checkPendingMentions checks that every message of the timeline in
// (seen, top] that mentions the user (by name, or in a small conversation
// with byAll also @all) and that they did not send is in their lane: a
// mention the inbox dropped reaches no sync, and the list, which counts
// mentions by the lane's index (checkListIndex holds the index to the
// lane), shows it nowhere. A large group's @all is one reference on the
// conversation, not in the lane. Mentions written before
// Config.MentionWindow are not asked for (expiry may have trimmed them).
func (r *run) checkPendingMentions(ctx context.Context, user, conv string, head redisstore.ConvHead, seen, top uint64, byAll bool, lane laneSet) error {
	ms, err := r.senders.mentionsOf(ctx, conv, user, head, seen, top, byAll)
	if err != nil {
		return err
	}
	for _, m := range ms {
		if m.wms >= r.mentionsFrom && !lane[redisstore.MentionMember(conv, m.seq)] {
			r.problem(KindMention, conv, user, "seq %d mentions the user above their read seq %d, but is not in their mention lane (nor in the list's count)", m.seq, seen)
		}
	}
	return nil
}
