package readpath

import (
	"sort"

	"github.com/offlinebox/offlinebox/schemas"

	"github.com/offlinebox/offlinebox/redisstore"
)

// convPlan is how one conversation will be answered, decided before any
// message is read.
type convPlan struct {
	conv     string
	ctype    schemas.ConvType
	large    bool
	activity int64
	epoch    uint64
	maxSeq   uint64
	first    uint64 // the timeline's head as the heads read it
	unread   uint64
	// lo: the slice holds seqs above it (the script also clamps it to the
	// join seq and the window).
	lo         uint64
	rebase     string // "" or a Rebase* reason
	incomplete bool
	left       bool
	mentions   int
	spans      []redisstore.MemberSpan // the user's spans, as readSyncHeads read them
}

// planSync decides, per conversation with news, where its slice starts and
// whether it rebases, orders the conversations by priority (pending
// mentions, direct, then activity), and lists the pending mentions in lane
// order (newest first, sync_mentions.go) after req.MentionsAfter.
func planSync(req SyncRequest, us *syncUser, heads map[string]syncHead) ([]convPlan, []mentionRef) {
	byConv := map[string][]mentionRef{}
	for _, m := range us.mentions {
		byConv[m.conv] = append(byConv[m.conv], m)
	}
	plans := make([]convPlan, 0, len(heads))
	var refs []mentionRef
	for _, conv := range us.syncConvs() {
		h, ok := heads[conv]
		if !ok || !h.member {
			continue
		}
		p, floor, read := planConv(req, us, conv, h)
		for _, m := range append(byConv[conv], h.alls...) {
			if m.seq > floor && m.seq <= h.seq && (!m.all || m.seq > read) {
				refs = append(refs, m)
				p.mentions++
			}
		}
		if p.rebase != "" || p.maxSeq > p.lo {
			plans = append(plans, p)
		}
	}
	sort.Slice(plans, func(i, j int) bool { return plans[i].before(plans[j]) })
	return plans, sortLane(refs, req.MentionsAfter)
}

// planConv chooses the cursor of one conversation and classifies it. The
// returned floor is the seq above which mentions are still pending (what
// the client is known to hold); read is the user's read seq.
func planConv(req SyncRequest, us *syncUser, conv string, h syncHead) (p convPlan, floor, read uint64) {
	p = convPlan{conv: conv, epoch: h.epoch, maxSeq: h.seq, first: h.first, activity: us.activity[conv], left: h.left, spans: h.spans}
	readSeq := redisstore.ReplyUint(us.inbox[redisstore.InboxField(conv, redisstore.FieldRead)])
	read = max(readSeq, h.joined)
	form := redisstore.InboxFormOf(us.inbox[redisstore.InboxField(conv, redisstore.FieldType)])
	p.ctype, p.large = form.Type(), form.Large()
	if us.large[conv] {
		p.large, p.activity = true, h.lts
	}
	if h.ctype == schemas.ConvType_CONV_TYPE_DIRECT {
		p.ctype = h.ctype
	}
	if p.large {
		p.unread = subFloor(h.seq, read)
		if read == h.noticesAbove {
			// The notices were counted above the inbox's read seq; a
			// join seq above it (the join's inbox write still to come)
			// leaves them uncounted rather than hide a message.
			p.unread = subFloor(p.unread, h.notices)
		}
	} else {
		// the inbox counts every seq delivered (C:l - C:r); notices are no
		// one's unread
		p.unread = subFloor(subFloor(redisstore.ReplyUint(us.inbox[redisstore.InboxField(conv, redisstore.FieldLast)]), readSeq), h.notices)
	}
	cur, held := req.Cursors[conv]
	if !held {
		if dc, ok := us.cursors[conv]; ok {
			cur, held = dc, true
		}
	}
	from := max(cur.Seq, h.joined)
	switch {
	case us.evicted:
		p.rebase = RebaseResync
	case held && cur.Epoch != 0 && cur.Epoch != h.epoch:
		p.rebase = RebaseEpoch
	case cur.Seq > h.seq:
		p.rebase = RebaseAhead
	case from+1 < h.first:
		// Far behind, but the cursor holds: the gap starts at it, and the
		// part of it below the window is read from history.
		p.incomplete = true
	}
	p.lo, floor = from, from
	if p.rebase != "" {
		// The cursor means nothing here: the client holds nothing we know.
		p.lo, floor = h.joined, h.joined
	}
	return p, floor, read
}

func (p convPlan) direct() bool { return p.ctype == schemas.ConvType_CONV_TYPE_DIRECT }

// before orders conversations by priority: those with pending mentions,
// then direct ones, then by last activity, newest first.
func (p convPlan) before(q convPlan) bool {
	if (p.mentions > 0) != (q.mentions > 0) {
		return p.mentions > 0
	}
	if p.direct() != q.direct() {
		return p.direct()
	}
	if p.activity != q.activity {
		return p.activity > q.activity
	}
	return p.conv < q.conv
}
