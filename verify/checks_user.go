package verify

import (
	"context"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/offlinebox/offlinebox/redisstore"
)

// checkInbox checks every conversation of a user's inbox: the stored
// unread (or, for large groups, the derived one) against a recount.
func (r *run) checkInbox(ctx context.Context, st *redisstore.Store, user string) error {
	in, err := st.ReadInbox(ctx, user)
	if err != nil || r.skip(st, in.Moved) {
		return err
	}
	r.rep.Users++
	for _, f := range in.Malformed {
		r.problem(KindInbox, "", user, "inbox field %q does not parse", f)
	}
	convs := slices.Sorted(maps.Keys(in.Convs))
	heads, err := r.main.ConvHeads(ctx, convs)
	if err != nil {
		return err
	}
	lane := newLaneSet(in)
	for _, conv := range convs {
		if err := r.checkInboxConv(ctx, user, conv, in.Convs[conv], heads[conv], lane); err != nil {
			return err
		}
	}
	return nil
}

func (r *run) checkInboxConv(ctx context.Context, user, conv string, e redisstore.InboxEntry, head redisstore.ConvHead, lane laneSet) error {
	large := e.Form == redisstore.InboxLarge
	switch {
	case !head.Exists:
		r.problem(KindInbox, conv, user, "the inbox names a conversation that does not exist")
		return nil
	case large && !head.Large:
		// C:t is the only record of large-group membership: an L in a
		// group that never became large would hide its unread.
		r.problem(KindInbox, conv, user, "form L, but the conversation is not a large group")
		return nil
	case e.Epoch > head.Epoch:
		r.problem(KindInbox, conv, user, "the inbox counts in epoch %d, after the conversation's %d", e.Epoch, head.Epoch)
		return nil
	case e.Epoch > 0 && e.Epoch < head.Epoch:
		// Nothing of the rebuilt timeline was delivered to this inbox yet:
		// its counts are the old timeline's, and its first delivery of
		// the new epoch takes back what lies above the rebuilt counter.
		return nil
	case !large && e.Last > head.Seq:
		r.problem(KindInbox, conv, user, "last delivered %d is above the counter %d", e.Last, head.Seq)
		return nil
	}
	// The unread the user is shown, over the seqs (seen, top].
	seen, top, shown := e.Read, e.Last, sub(e.Last, e.Read)
	if large {
		seen, top = max(e.Read, e.Joined), head.Seq
		notices, err := r.main.NoticesIn(ctx, conv, seen, top)
		if err != nil {
			return err
		}
		shown = sub(sub(top, seen), notices)
	} else if e.Last > e.Read && e.Form != redisstore.InboxDirect {
		// The inbox counts every seq delivered; readers leave out the
		// join and leave notices among them, as in large groups.
		notices, err := r.main.NoticesIn(ctx, conv, e.Read, e.Last)
		if err != nil {
			return err
		}
		shown = sub(shown, notices)
	}
	if top <= seen {
		return nil
	}
	if err := r.checkPendingMentions(ctx, user, conv, head, seen, top, !large, lane); err != nil {
		return err
	}
	// Unread leaves out join and leave notices, in either form.
	own, err := r.senders.own(ctx, conv, user, head, seen, top)
	if err != nil {
		return err
	}
	if recount := top - seen - uint64(own); recount != shown {
		r.problem(KindUnread, conv, user, "unread %d, recount of messages from others in %d..%d is %d (%d of the user's own or notices)",
			shown, seen+1, top, recount, own)
	}
	return nil
}

func sub(a, b uint64) uint64 {
	if a < b {
		return 0
	}
	return a - b
}

// checkMentions checks that each of a user's mention references points at
// a message that exists and mentions them, or lies below the floor.
func (r *run) checkMentions(ctx context.Context, st *redisstore.Store, user string) error {
	moved, refs, err := st.ReadMentionLane(ctx, user)
	if err != nil || r.skip(st, moved) {
		return err
	}
	for _, ref := range refs {
		r.rep.Mentions++
		i := strings.LastIndexByte(ref, ':')
		seq, perr := strconv.ParseUint(ref[i+1:], 10, 64)
		if i < 1 || perr != nil {
			r.problem(KindMention, "", user, "reference %q is not CONV:SEQ", ref)
			continue
		}
		conv := ref[:i]
		head, entries, err := r.main.TimelineEntries(ctx, conv, seq, seq)
		if err != nil {
			return err
		}
		switch {
		case !head.Exists:
			r.problem(KindMention, conv, user, "reference to seq %d of a conversation that does not exist", seq)
		case seq > head.Seq:
			r.problem(KindMention, conv, user, "reference to seq %d, above the counter %d", seq, head.Seq)
		case len(entries) == 1 && !mentions(entries[0].GetMessage(), user):
			r.problem(KindMention, conv, user, "reference to seq %d, which does not mention the user", seq)
		}
	}
	return nil
}

// checkCursor checks one device's cursor: a registered device, and no
// conversation acked above its counter (in the same epoch: a cursor of an
// older epoch is answered with a rebase).
func (r *run) checkCursor(ctx context.Context, st *redisstore.Store, user, device string) error {
	d, err := st.ReadDevice(ctx, user, device)
	if err != nil || r.skip(st, d.Moved) {
		return err
	}
	if !d.Registered {
		r.problem(KindCursor, "", user, "cursor of device %q, which is not in the device set", device)
	}
	convs := slices.Sorted(maps.Keys(d.Cursors))
	heads, err := r.main.ConvHeads(ctx, convs)
	if err != nil {
		return err
	}
	for _, conv := range convs {
		r.rep.Cursors++
		c, h := d.Cursors[conv], heads[conv]
		switch {
		case !h.Exists:
			r.problem(KindCursor, conv, user, "device %q acked a conversation that does not exist", device)
		case (c.Epoch == 0 || c.Epoch == h.Epoch) && c.Seq > h.Seq:
			r.problem(KindCursor, conv, user, "device %q acked seq %d, above the counter %d", device, c.Seq, h.Seq)
		}
	}
	return nil
}

// checkDevices checks the device limit.
func (r *run) checkDevices(ctx context.Context, st *redisstore.Store, user string) error {
	moved, devs, err := st.ReadDeviceSet(ctx, user)
	if err != nil || r.skip(st, moved) {
		return err
	}
	if limit := st.Config().MaxDevices; len(devs) > limit {
		r.problem(KindDevices, "", user, "%d devices registered, at most %d allowed", len(devs), limit)
	}
	return nil
}
