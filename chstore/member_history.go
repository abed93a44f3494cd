package chstore

import (
	"context"
	"fmt"

	"github.com/offlinebox/offlinebox/schemas"
)

// A member reads a conversation's history from when they joined; a former
// member (or one who left and came back) reads each span they belonged to,
// nothing between. The Redis read path keeps the same rule in its scripts;
// for the history it lives here, over the two reads that take part in it:
// one epoch's page, and where two epochs part.

// Spans says which seqs of the conversation's current epoch a user may
// read (the spans they belonged to); redisstore.ConvAccess is one.
type Spans interface {
	// Reads reports whether the user may read seq.
	Reads(seq uint64) bool
	// ReadableBelow is the highest seq below before the user may read
	// (0: none).
	ReadableBelow(before uint64) uint64
	// LastReadable is the highest seq the user may read (0: none).
	LastReadable() uint64
	// MemberAcross reports whether the user was a member from at or
	// before seq to after seq+1.
	MemberAcross(seq uint64) bool
}

// EpochPages are the reads a member's page is made of; *Store is one.
type EpochPages interface {
	History(ctx context.Context, conv string, epoch, beforeSeq uint64, limit int) ([]*schemas.Sequenced, bool, error)
	SharedSeq(ctx context.Context, conv string, a, b uint64) (uint64, error)
}

// MemberQuery asks for one page of a conversation's history for a user.
type MemberQuery struct {
	// Spans are the user's, in seqs of the Current epoch.
	Spans Spans
	// Member: the user is a member now (their last span is open).
	Member bool
	// Current is the conversation's current epoch.
	Current uint64
	// Epoch is the epoch read (0: Current). An older epoch is what the
	// timeline held before a rebuild; its seqs above where it parted from
	// Current are another timeline's, so they are served only to a user
	// who was a member across the parting.
	Epoch uint64
	// Before: the page is the newest readable seqs below it (0: from the
	// newest the user may read).
	Before uint64
	// Limit bounds the page, before the seqs the user may not read are
	// left out.
	Limit int
}

// MemberHistory reads the page q asks for and keeps only what the user may
// read. A page starts at the newest seq below Before the user may read: one
// that began in a stretch they were away would hold nothing to go on from.
// hasMore says whether the user may read older seqs than the page's.
func MemberHistory(ctx context.Context, pages EpochPages, conv string, q MemberQuery) (page []*schemas.Sequenced, hasMore bool, err error) {
	if q.Epoch == 0 {
		q.Epoch = q.Current
	}
	rd := epochReader{spans: q.Spans}
	if q.Epoch != q.Current {
		// The user's spans are seqs of the current epoch; another epoch
		// shares them only up to where the two part.
		if rd.upTo, err = pages.SharedSeq(ctx, conv, q.Epoch, q.Current); err != nil {
			return nil, false, fmt.Errorf("history of %s: %w", conv, err)
		}
		rd.parted, rd.across = true, q.Spans.MemberAcross(rd.upTo)
	}
	before := q.Before
	switch {
	case before != 0, rd.parted && rd.across, !rd.parted && q.Member:
		// from before, or from the newest: the user's span is open
	case rd.parted:
		before = min(q.Spans.LastReadable(), rd.upTo) + 1
	default:
		before = q.Spans.LastReadable() + 1
	}
	if before != 0 {
		if before = rd.below(before) + 1; before == 1 {
			return nil, false, nil
		}
	}
	page, hasMore, err = pages.History(ctx, conv, q.Epoch, before, q.Limit)
	if err != nil {
		return nil, false, fmt.Errorf("history of %s: %w", conv, err)
	}
	kept := page[:0]
	for _, m := range page {
		if rd.reads(m.GetSeq()) {
			kept = append(kept, m)
		}
	}
	if len(kept) == 0 || rd.below(kept[0].GetSeq()) == 0 {
		hasMore = false
	}
	return kept, hasMore, nil
}

// epochReader says which seqs of one epoch's history a user may read:
// those of their spans (in the current epoch); in an epoch that parted
// from the current one after upTo, those of their spans up to upTo, and
// those above it when they were a member across the parting.
type epochReader struct {
	spans          Spans
	parted, across bool
	upTo           uint64
}

func (rd epochReader) reads(seq uint64) bool {
	if rd.parted && seq > rd.upTo {
		return rd.across
	}
	return rd.spans.Reads(seq)
}

// below is the highest seq below before the user may read (0: none).
func (rd epochReader) below(before uint64) uint64 {
	if rd.parted && before > rd.upTo+1 {
		if rd.across {
			return before - 1
		}
		before = rd.upTo + 1
	}
	return rd.spans.ReadableBelow(before)
}
