package api

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"

	"github.com/offlinebox/offlinebox/auth"
	"github.com/offlinebox/offlinebox/chstore"
	"github.com/offlinebox/offlinebox/schemas"
)

// HistoryReader serves pages older than the Redis window (roaming);
// *chstore.Store is one. History is read per epoch: a seq names a message
// only together with its epoch. Which of its seqs a user may read is
// chstore.MemberHistory's to decide.
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

// pageHistory answers GET /v1/conversations/{conv}/history: a page of the
// conversation's history in the epoch asked (the current one when none is
// named), of the seqs the user may read (chstore.MemberHistory: from when
// they joined, each span a former member belonged to).
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
	page, more, err := chstore.MemberHistory(r.Context(), s.history, conv, chstore.MemberQuery{
		Spans: a, Member: a.Member, Current: a.Epoch, Epoch: epoch, Before: before, Limit: limit})
	if err != nil {
		return 0, nil, s.historyError(r, err)
	}
	msgs, err := s.encodeMessages(r.Context(), page, fullForm)
	if err != nil {
		return 0, nil, err
	}
	return http.StatusOK, historyJSON{ConvID: conv, Epoch: epoch, HasMore: more, Messages: msgs}, nil
}

// errHistoryDown answers a read the history store could not serve: a
// server or one shard of a sharded history is down or too slow.
var errHistoryDown = &apiError{Status: http.StatusServiceUnavailable, Code: "history_unavailable",
	Msg: "the history store did not answer; retry later"}

// historyError maps a history read's failure: bad input stays a 4xx,
// anything else is the store failing, which a retry may cure.
func (s *Server) historyError(r *http.Request, err error) error {
	var ae *apiError
	if errors.As(err, &ae) || errors.Is(err, schemas.ErrInvalid) || r.Context().Err() != nil {
		return err
	}
	s.log.Warn("history read failed", "path", r.URL.Path, "err", err)
	return errHistoryDown
}
