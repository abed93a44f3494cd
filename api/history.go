package api

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/offlinebox/offlinebox/auth"
	"github.com/offlinebox/offlinebox/schemas"
)

// HistoryReader serves pages older than the Redis window (roaming);
// *chstore.Store is one.
type HistoryReader interface {
	// History returns the newest messages of conv with seq < beforeSeq
	// (beforeSeq 0: below the newest), at most limit, in ascending seq,
	// and whether older ones exist.
	History(ctx context.Context, conv string, beforeSeq uint64, limit int) (page []*schemas.Sequenced, hasMore bool, err error)
}

type historyJSON struct {
	ConvID   string            `json:"conv_id"`
	HasMore  bool              `json:"has_more"`
	Messages []json.RawMessage `json:"messages"`
}

// pageHistory answers GET /v1/conversations/{conv}/history: a member reads
// the conversation's history from when they joined.
func (s *Server) pageHistory(r *http.Request, id auth.Identity) (int, any, error) {
	conv := r.PathValue("conv")
	if err := schemas.ValidID("conv", conv); err != nil {
		return 0, nil, invalidField("", err)
	}
	q := r.URL.Query()
	if err := onlyParams(q, "before", "limit"); err != nil {
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
	page, more, err := s.history.History(r.Context(), conv, before, limit)
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
	return http.StatusOK, historyJSON{ConvID: conv, HasMore: more, Messages: msgs}, nil
}
