package rebuild

import (
	"context"
	"fmt"

	"github.com/offlinebox/offlinebox/schemas"
)

// rebuildPlan is what the history says the conversation's Redis state must
// be, found before anything is written.
type rebuildPlan struct {
	epoch uint64 // the history's epoch read
	top   uint64 // its highest seq: the rebuilt counter
	first uint64 // first seq of the rebuilt timeline (top+1: empty)
	hole  uint64 // a seq the history lacks that cut the timeline short
	ctype schemas.ConvType
	// maxEpoch is the highest epoch among the records read.
	maxEpoch uint64
	// newest is the newest ordinary message read (the meta summary);
	// sample any record (for a direct conversation's participants).
	newest, sample *schemas.Sequenced
}

// planFirst walks the history back from its top to find where the
// rebuilt timeline starts. With keepFrom > 0 (the store kept its meta and
// the counter matches) the timeline starts at keepFrom, as before, since
// the floor only grows. Otherwise it starts where expiry would have left
// it: at the oldest record still within its window, found by reading back
// until records older than the longest window (nothing older can be kept).
// A seq the history lacks stops the walk: the timeline must be contiguous.
func planFirst(ctx context.Context, src HistorySource, conv string, epoch, top, keepFrom uint64, opt Options) (*rebuildPlan, error) {
	p := &rebuildPlan{epoch: epoch, top: top, first: top + 1}
	oldest := opt.Now.Add(-opt.Retention.LongestWindow()).UnixMilli()
	page := uint64(opt.PageSize)
	for hi := top; hi >= 1; {
		lo := uint64(1)
		if hi > page {
			lo = hi - page + 1
		}
		if keepFrom > 0 {
			lo = max(lo, keepFrom)
		}
		rows, err := src.Range(ctx, conv, epoch, lo, hi)
		if err != nil {
			return nil, fmt.Errorf("rebuild %s: read history %d..%d: %w", conv, lo, hi, err)
		}
		done := false
		i := len(rows) - 1
		for s := hi; s >= lo; s-- {
			if i < 0 || rows[i].GetSeq() != s {
				if p.first == s+1 {
					p.hole = s
				}
				return p, nil
			}
			e := rows[i]
			i--
			p.note(e)
			if keepFrom > 0 || !opt.Retention.Expired(p.ctype, e.GetMessage().GetKind(), e.GetWriteTimeMs(), opt.Now) {
				p.first = s
			}
			done = done || e.GetWriteTimeMs() < oldest
		}
		if lo == 1 || lo == keepFrom || (done && keepFrom == 0) {
			return p, nil
		}
		hi = lo - 1
	}
	return p, nil
}

// note keeps what the meta needs from a record read while walking back.
func (p *rebuildPlan) note(e *schemas.Sequenced) {
	p.maxEpoch = max(p.maxEpoch, e.GetEpoch())
	if p.sample == nil {
		p.sample = e
		p.ctype = e.GetMessage().GetConvType()
	}
	if p.newest == nil && e.GetMessage().GetKind() == schemas.Kind_KIND_MESSAGE {
		p.newest = e
	}
}

// MembershipHistory is offered by a history source that can list a
// conversation's join and leave records on their own; a group's members
// are replayed from them. Without it a group's members are not restored.
type MembershipHistory interface {
	// MembershipChanges returns one epoch's join and leave records with
	// seq > afterSeq, ascending, at most limit.
	MembershipChanges(ctx context.Context, conv string, epoch, afterSeq uint64, limit int) ([]*schemas.Sequenced, error)
}

// memberReplay is a member set rebuilt the way the sequencing script
// builds it (see lua/sequence.lua), so that every field comes out as the
// script would have left it.
type memberReplay struct {
	members map[string]uint64
	mver    uint64
	lgs     uint64 // seq from which the group is large (0: not large)
	// roles (o, a) and the former members' past spans ("J-L", oldest
	// first), as the script keeps them; see rebuild_roles.go.
	roles map[string]string
	past  map[string][]string
}

// replayMembers rebuilds a conversation's member set from its history, or
// returns nil when the history cannot tell it whole.
func (s *Rebuilder) replayMembers(ctx context.Context, src HistorySource, conv string, p *rebuildPlan) (*memberReplay, error) {
	r := &memberReplay{members: map[string]uint64{}, roles: map[string]string{}, past: map[string][]string{}}
	if p.ctype == schemas.ConvType_CONV_TYPE_DIRECT {
		// Participants are set by the first message and never change.
		m := p.sample.GetMessage()
		if len(m.GetRecipients()) != 1 {
			return nil, nil
		}
		r.members[m.GetSender()], r.members[m.GetRecipients()[0]] = 0, 0
		r.mver = 1
		return r, nil
	}
	mh, ok := src.(MembershipHistory)
	if !ok {
		return nil, nil
	}
	// The founders are named by the record of seq 1; once retention
	// dropped it the member set cannot be known.
	if head, err := src.Range(ctx, conv, p.epoch, 1, 1); err != nil {
		return nil, fmt.Errorf("rebuild %s: read seq 1: %w", conv, err)
	} else if len(head) == 0 {
		return nil, nil
	} else if head[0].GetMessage().GetKind() == schemas.Kind_KIND_MESSAGE {
		r.apply(head[0], s.cfg.LargeGroupThreshold)
	}
	for after := uint64(0); ; {
		recs, err := mh.MembershipChanges(ctx, conv, p.epoch, after, rebuildMemberPage)
		if err != nil {
			return nil, fmt.Errorf("rebuild %s: read membership after %d: %w", conv, after, err)
		}
		for _, e := range recs {
			r.apply(e, s.cfg.LargeGroupThreshold)
			after = e.GetSeq()
		}
		if len(recs) < rebuildMemberPage {
			return r, nil
		}
	}
}

// rebuildMemberPage is how many membership records one read asks for.
const rebuildMemberPage = 1000

// apply replays one join or leave record.
func (r *memberReplay) apply(e *schemas.Sequenced, threshold int) {
	before := len(r.members)
	switch e.GetMessage().GetKind() {
	case schemas.Kind_KIND_MESSAGE:
		if e.GetSeq() == 1 {
			r.members[e.GetMessage().GetSender()] = 0 // a group founded by a message
			r.setOwner(e.GetMessage().GetSender())
		}
	case schemas.Kind_KIND_MEMBER_JOIN:
		at := e.GetSeq()
		if at == 1 {
			at = 0 // founders see the record that names them
		}
		for _, u := range e.GetMessage().GetRecipients() {
			if _, ok := r.members[u]; !ok {
				r.members[u] = at
			}
		}
		r.joinRoles(e)
		if r.lgs == 0 && len(r.members) > threshold {
			r.lgs = e.GetSeq()
		}
	case schemas.Kind_KIND_MEMBER_LEAVE:
		r.leave(e)
	}
	if len(r.members) != before {
		r.mver++
	}
}
