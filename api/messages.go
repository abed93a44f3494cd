package api

import (
	"encoding/json"
	"errors"
	"net/http"

	"github.com/offlinebox/offlinebox/auth"
	"github.com/offlinebox/offlinebox/redisstore"
	"github.com/offlinebox/offlinebox/schemas"
)

// pageBytes bounds the raw entries of one page so that its JSON (bodies in
// base64 grow by a third) stays near DefaultSyncBytes.
const pageBytes = DefaultSyncBytes * 3 / 4

type pageJSON struct {
	ConvID   string `json:"conv_id"`
	Epoch    uint64 `json:"epoch"`
	MaxSeq   uint64 `json:"max_seq"`
	FirstSeq uint64 `json:"first_seq"`
	HasMore  bool   `json:"has_more"`
	// Incomplete: part of the range asked for left the Redis window; read
	// it from /history.
	Incomplete bool              `json:"incomplete"`
	Messages   []json.RawMessage `json:"messages"`
}

// pageMessages answers GET /v1/conversations/{conv}/messages: with after,
// the oldest messages above it (paging through a sync gap); without, the
// newest below before (scrolling up), within the Redis window.
func (s *Server) pageMessages(r *http.Request, id auth.Identity) (int, any, error) {
	conv := r.PathValue("conv")
	if err := schemas.ValidID("conv", conv); err != nil {
		return 0, nil, invalidField("", err)
	}
	q := r.URL.Query()
	if err := onlyParams(q, "after", "before", "limit", "epoch"); err != nil {
		return 0, nil, err
	}
	var pq redisstore.PageQuery
	var err error
	if pq.After, pq.HasAfter, err = seqParam(q.Get("after"), "after"); err != nil {
		return 0, nil, err
	}
	if pq.Before, _, err = seqParam(q.Get("before"), "before"); err != nil {
		return 0, nil, err
	}
	if pq.Epoch, _, err = seqParam(q.Get("epoch"), "epoch"); err != nil {
		return 0, nil, err
	}
	if pq.Limit, err = intParam(q.Get("limit"), "limit", DefaultPageLimit, 1, MaxPageLimit); err != nil {
		return 0, nil, err
	}
	pq.MaxBytes = pageBytes
	p, err := s.router.Main().ReadPage(r.Context(), id.User, conv, pq)
	if ee := (*redisstore.EpochError)(nil); errors.As(err, &ee) {
		return 0, nil, epochMismatch("epoch", ee.Asked, ee.Current)
	}
	if err != nil {
		return 0, nil, err
	}
	if pq.HasAfter && pq.After > p.MaxSeq {
		return 0, nil, badRequest("after", "%d is beyond the conversation's max seq %d", pq.After, p.MaxSeq)
	}
	msgs, err := encodeMessages(p.Messages)
	if err != nil {
		return 0, nil, err
	}
	return http.StatusOK, pageJSON{ConvID: conv, Epoch: p.Epoch, MaxSeq: p.MaxSeq, FirstSeq: p.First,
		HasMore: p.HasMore, Incomplete: p.Incomplete, Messages: msgs}, nil
}
