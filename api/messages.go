package api

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/url"

	"github.com/offlinebox/offlinebox/auth"
	"github.com/offlinebox/offlinebox/edge"
	"github.com/offlinebox/offlinebox/redisstore/readpath"
	"github.com/offlinebox/offlinebox/schemas"
)

// A message's JSON is written by package edge (message_json.go there),
// which the live channel's frames share.
type messageForm = edge.MessageForm

const (
	fullForm  = edge.FullForm
	sliceForm = edge.SliceForm
	textPlain = edge.TextPlain
)

var (
	appendMessageJSON = edge.AppendMessageJSON
	appendJSONString  = edge.AppendJSONString
)

// A page is bounded by its byte budget, counted as a sync answer's is
// (redisstore/readpath/sync_budget.go): max_bytes of JSON, DefaultSyncBytes unless
// the client asks. With max_bytes the limit may go up to
// MaxBudgetedPageLimit: a background catch-up asks for pages the budget
// bounds, not 200 messages.
const MaxBudgetedPageLimit = 5000

// pageEnvelopeBytes is room for a page's fields around its messages.
const pageEnvelopeBytes = 256

type pageJSON struct {
	ConvID string `json:"conv_id"`
	Epoch  uint64 `json:"epoch"`
	// ConvType is what every message of the page shares (the messages, in
	// the slice form, leave it out); absent when there is none.
	ConvType string `json:"conv_type,omitempty"`
	MaxSeq   uint64 `json:"max_seq"`
	FirstSeq uint64 `json:"first_seq"`
	HasMore  bool   `json:"has_more"`
	// Incomplete: part of the range asked for left the Redis window; read
	// it from /history.
	Incomplete bool              `json:"incomplete"`
	Messages   []json.RawMessage `json:"messages"`
}

// pageRange reads the range of a page: after and before (exclusive, as
// cursors are: after is a seq the client holds), or from and to
// (inclusive, as a sync gap names them: the page for gap {from, to} is
// from=F&to=T).
func pageRange(q url.Values) (readpath.PageQuery, error) {
	var pq readpath.PageQuery
	var err error
	if pq.After, pq.HasAfter, err = seqParam(q.Get("after"), "after"); err != nil {
		return pq, err
	}
	if pq.Before, _, err = seqParam(q.Get("before"), "before"); err != nil {
		return pq, err
	}
	from, hasFrom, err := seqParam(q.Get("from"), "from")
	if err != nil {
		return pq, err
	}
	to, hasTo, err := seqParam(q.Get("to"), "to")
	if err != nil {
		return pq, err
	}
	switch {
	case (hasFrom || hasTo) && (pq.HasAfter || q.Get("before") != ""):
		return pq, badRequest("from", "from and to name the range inclusively in place of after and before; give one pair")
	case hasFrom && from < 1:
		return pq, badRequest("from", "is %d; seqs start at 1", from)
	case hasFrom && hasTo && to < from:
		return pq, badRequest("to", "%d is below from %d", to, from)
	}
	if hasFrom {
		pq.After, pq.HasAfter = from-1, true
	}
	if hasTo {
		pq.Before = to + 1
	}
	return pq, nil
}

// pageMessages answers GET /v1/conversations/{conv}/messages: with after,
// the oldest messages above it (paging through a sync gap); without, the
// newest below before (scrolling up), within the Redis window. from and
// to name the same range as a sync gap does, inclusive, in place of
// after and before.
func (s *Server) pageMessages(r *http.Request, id auth.Identity) (int, any, error) {
	conv := r.PathValue("conv")
	if err := schemas.ValidID("conv", conv); err != nil {
		return 0, nil, invalidField("", err)
	}
	q := r.URL.Query()
	if err := onlyParams(q, "after", "before", "from", "to", "limit", "epoch", "max_bytes"); err != nil {
		return 0, nil, err
	}
	pq, err := pageRange(q)
	if err != nil {
		return 0, nil, err
	}
	if pq.Epoch, _, err = seqParam(q.Get("epoch"), "epoch"); err != nil {
		return 0, nil, err
	}
	if pq.MaxBytes, err = intParam(q.Get("max_bytes"), "max_bytes", DefaultSyncBytes, MinSyncBytes, MaxSyncBytes); err != nil {
		return 0, nil, err
	}
	maxLimit := MaxPageLimit
	if q.Has("max_bytes") {
		maxLimit = MaxBudgetedPageLimit
	}
	if pq.Limit, err = intParam(q.Get("limit"), "limit", DefaultPageLimit, 1, maxLimit); err != nil {
		return 0, nil, err
	}
	// The store cuts on raw entry bytes, never more than their JSON: what
	// it leaves out could not have fitted; the JSON is cut below.
	p, err := s.reads.ReadPage(r.Context(), id.User, conv, pq)
	if ee := (*readpath.EpochError)(nil); errors.As(err, &ee) {
		return 0, nil, epochMismatch("epoch", ee.Asked, ee.Current)
	}
	if err != nil {
		return 0, nil, err
	}
	if pq.HasAfter && pq.After > p.MaxSeq {
		return 0, nil, badRequest("after", "%d is beyond the conversation's max seq %d", pq.After, p.MaxSeq)
	}
	msgs, err := s.encodeMessages(r.Context(), p.Messages, sliceForm)
	if err != nil {
		return 0, nil, err
	}
	out := pageJSON{ConvID: conv, Epoch: p.Epoch, MaxSeq: p.MaxSeq, FirstSeq: p.First,
		HasMore: p.HasMore, Incomplete: p.Incomplete}
	if len(p.Messages) > 0 {
		out.ConvType = schemas.ConvTypeName(p.Messages[0].GetMessage().GetConvType())
	}
	if kept := withinBytes(msgs, pq.MaxBytes-pageEnvelopeBytes-len(appendJSONString(nil, conv)), !pq.HasAfter); len(kept) < len(msgs) {
		msgs, out.HasMore = kept, true
	}
	out.Messages = msgs
	return http.StatusOK, out, nil
}

// withinBytes keeps the messages whose JSON fits in room (at least one),
// from the oldest or, fromTop, from the newest: the end a page keeps.
func withinBytes(msgs []json.RawMessage, room int, fromTop bool) []json.RawMessage {
	used, n := 0, 0
	for i := range msgs {
		j := i
		if fromTop {
			j = len(msgs) - 1 - i
		}
		if size := len(msgs[j]) + 1; n == 0 || used+size <= room {
			used, n = used+size, n+1
			continue
		}
		break
	}
	if fromTop {
		return msgs[len(msgs)-n:]
	}
	return msgs[:n]
}
