package api

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/offlinebox/offlinebox/auth"
	"github.com/offlinebox/offlinebox/redisstore"
	"github.com/offlinebox/offlinebox/schemas"
)

// HistoryReader serves pages older than the Redis window (roaming);
// *chstore.Store is one. History is read per epoch: a seq names a message
// only together with its epoch.
type HistoryReader interface {
	// History returns the newest messages of one epoch of conv with seq <
	// beforeSeq (beforeSeq 0: below the newest), at most limit, in
	// ascending seq, each carrying that epoch, and whether older ones
	// exist.
	History(ctx context.Context, conv string, epoch, beforeSeq uint64, limit int) (page []*schemas.Sequenced, hasMore bool, err error)
	// SharedSeq is the highest seq up to which epochs a and b of conv
	// hold the same messages.
	SharedSeq(ctx context.Context, conv string, a, b uint64) (uint64, error)
}

type historyJSON struct {
	ConvID   string            `json:"conv_id"`
	Epoch    uint64            `json:"epoch"`
	HasMore  bool              `json:"has_more"`
	Messages []json.RawMessage `json:"messages"`
}

// pageHistory answers GET /v1/conversations/{conv}/history: a member reads
// the conversation's history from when they joined, in the epoch asked
// (the current one when none is named); a former member (or one who left
// and came back) reads each span they belonged to, nothing between. A page
// starts at the newest seq below before the user may read. An older epoch
// is what the timeline held before a rebuild, messages that never reached
// the rebuilt one included; its seqs above where it parted from the
// current epoch are another timeline's, so they are served only to a user
// who was a member across the parting.
func (s *Server) pageHistory(r *http.Request, id auth.Identity) (int, any, error) {
	conv := r.PathValue("conv")
	if err := schemas.ValidID("conv", conv); err != nil {
		return 0, nil, invalidField("", err)
	}
	q := r.URL.Query()
	if err := onlyParams(q, "before", "limit", "epoch"); err != nil {
		return 0, nil, err
	}
	before, _, err := seqParam(q.Get("before"), "before")
	if err != nil {
		return 0, nil, err
	}
	limit, err := intParam(q.Get("limit"), "limit", DefaultPageLimit, 1, MaxPageLimit)
	if err != nil {
		return 0, nil, err
	}
	epoch, named, err := seqParam(q.Get("epoch"), "epoch")
	if err != nil {
		return 0, nil, err
	}
	if named && epoch == 0 {
		return 0, nil, badRequest("epoch", "must be at least 1")
	}
	if s.history == nil {
		return 0, nil, errNoHistory
	}
	access, err := s.router.Main().ConversationAccess(r.Context(), id.User, []string{conv})
	if err != nil {
		return 0, nil, err
	}
	a := access[conv]
	if !a.Member && !a.Left {
		return 0, nil, forbidden("not a member of this conversation")
	}
	if !named {
		epoch = a.Epoch
	}
	rd := spanReader{a: a}
	if epoch != a.Epoch {
		// The user's spans are seqs of the current epoch; another epoch
		// shares them only up to where the two part.
		if rd.upTo, err = s.history.SharedSeq(r.Context(), conv, epoch, a.Epoch); err != nil {
			return 0, nil, fmt.Errorf("history of %s: %w", conv, err)
		}
		rd.parted, rd.across = true, a.MemberAcross(rd.upTo)
	}
	switch {
	case before != 0, rd.parted && rd.across, !rd.parted && a.Member:
		// from before, or from the newest: the user's span is open
	case rd.parted:
		before = min(a.LastReadable(), rd.upTo) + 1
	default:
		before = a.LastReadable() + 1
	}
	if before != 0 {
		// Start at the newest seq the user may read: a page that began in
		// a stretch they were away would hold nothing to go on from.
		if before = rd.below(before) + 1; before == 1 {
			return http.StatusOK, historyJSON{ConvID: conv, Epoch: epoch, Messages: []json.RawMessage{}}, nil
		}
	}
	page, more, err := s.history.History(r.Context(), conv, epoch, before, limit)
	if err != nil {
		return 0, nil, fmt.Errorf("history of %s: %w", conv, err)
	}
	// What was sent while the user was not a member is not theirs to read.
	kept := page[:0]
	for _, m := range page {
		if rd.reads(m.GetSeq()) {
			kept = append(kept, m)
		}
	}
	if len(kept) == 0 || rd.below(kept[0].GetSeq()) == 0 {
		more = false
	}
	msgs, err := s.encodeMessages(r.Context(), kept)
	if err != nil {
		return 0, nil, err
	}
	return http.StatusOK, historyJSON{ConvID: conv, Epoch: epoch, HasMore: more, Messages: msgs}, nil
}

// spanReader says which seqs of one epoch's history a user may read: those
// of their spans (in the current epoch); in an epoch that parted from the
// current one after upTo, those of their spans up to upTo, and those above
// it when they were a member across the parting.
type spanReader struct {
	a              redisstore.ConvAccess
	parted, across bool
	upTo           uint64
}

func (rd spanReader) reads(seq uint64) bool {
	if rd.parted && seq > rd.upTo {
		return rd.across
	}
	return rd.a.Reads(seq)
}

// below is the highest seq below before the user may read (0: none).
func (rd spanReader) below(before uint64) uint64 {
	if rd.parted && before > rd.upTo+1 {
		if rd.across {
			return before - 1
		}
		before = rd.upTo + 1
	}
	return rd.a.ReadableBelow(before)
}
