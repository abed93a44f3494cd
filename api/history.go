package api

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/http"

	"github.com/offlinebox/offlinebox/auth"
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
// (the current one when none is named). An older epoch is what the
// timeline held before a rebuild, messages that never reached the rebuilt
// one included; its seqs above where it parted from the current epoch are
// another timeline's, so they are served only to a member who joined
// before the parting.
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
	if !a.Member {
		return 0, nil, forbidden("not a member of this conversation")
	}
	if !named {
		epoch = a.Epoch
	}
	// The user's join is a seq of the current epoch; in another epoch it
	// holds only up to where the two share their messages.
	upTo := uint64(math.MaxUint64)
	if epoch != a.Epoch {
		if upTo, err = s.history.SharedSeq(r.Context(), conv, epoch, a.Epoch); err != nil {
			return 0, nil, fmt.Errorf("history of %s: %w", conv, err)
		}
	}
	if a.Joined > upTo {
		return http.StatusOK, historyJSON{ConvID: conv, Epoch: epoch, Messages: []json.RawMessage{}}, nil
	}
	page, more, err := s.history.History(r.Context(), conv, epoch, before, limit)
	if err != nil {
		return 0, nil, fmt.Errorf("history of %s: %w", conv, err)
	}
	// What came before the user joined is not theirs to read.
	kept := page[:0]
	for _, m := range page {
		if m.GetSeq() > a.Joined {
			kept = append(kept, m)
		}
	}
	if len(kept) < len(page) || (len(kept) > 0 && kept[0].GetSeq() == a.Joined+1) {
		more = false
	}
	msgs, err := encodeMessages(kept)
	if err != nil {
		return 0, nil, err
	}
	return http.StatusOK, historyJSON{ConvID: conv, Epoch: epoch, HasMore: more, Messages: msgs}, nil
}
