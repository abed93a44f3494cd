package api

import (
	"encoding/json"
	"fmt"
	"net/http"
	"sort"

	"github.com/offlinebox/offlinebox/auth"
	"github.com/offlinebox/offlinebox/redisstore"
	"github.com/offlinebox/offlinebox/redisstore/readpath"
	"github.com/offlinebox/offlinebox/schemas"
	"github.com/offlinebox/offlinebox/wire"
)

// syncRequest is the body of POST /v1/sync.
type syncRequest struct {
	DeviceID string `json:"device_id"`
	// Cursors: conversation → what the client holds. Decoded one by one
	// so that errors name the conversation.
	Cursors  map[string]json.RawMessage `json:"cursors"`
	Limit    *int                       `json:"limit"`
	MaxBytes *int                       `json:"max_bytes"`
	// MentionsAfter continues the mention lane after the mark an answer
	// gave in mentions_next.
	MentionsAfter *string `json:"mentions_after"`
}

type cursorJSON = wire.Cursor

// syncResponse is the answer of POST /v1/sync, in this order: a page of
// the mention lane, conversations by priority, summaries of what did not
// fit.
type syncResponse struct {
	DeviceID string            `json:"device_id"`
	Resync   bool              `json:"resync"`
	Mentions []json.RawMessage `json:"mentions"`
	// MentionsMore: pending mentions did not fit; MentionsNext is the
	// mark to continue the lane from (mentions_after).
	MentionsMore  bool              `json:"mentions_more"`
	MentionsNext  string            `json:"mentions_next,omitempty"`
	Conversations []json.RawMessage `json:"conversations"`
	Summaries     []json.RawMessage `json:"summaries"`
	// Omitted counts conversations with news not even summarised.
	Omitted int `json:"omitted"`
}

type mentionJSON struct {
	ConvID  string          `json:"conv_id"`
	All     bool            `json:"all"`
	Message json.RawMessage `json:"message"`
}

type gapJSON struct {
	From uint64 `json:"from"`
	To   uint64 `json:"to"`
}

// convHeadJSON is what a sync answer says first of every conversation it
// names, with its messages or in a summary; embedded first, its keys stay
// the first of each.
type convHeadJSON struct {
	ConvID string `json:"conv_id"`
	Kind   string `json:"kind"`
	Large  bool   `json:"large"`
	Epoch  uint64 `json:"epoch"`
	MaxSeq uint64 `json:"max_seq"`
	Unread uint64 `json:"unread"`
}

func convHead(conv string, t schemas.ConvType, large bool, epoch, maxSeq, unread uint64) convHeadJSON {
	return convHeadJSON{ConvID: conv, Kind: schemas.ConvTypeName(t), Large: large, Epoch: epoch, MaxSeq: maxSeq, Unread: unread}
}

type syncConvJSON struct {
	convHeadJSON
	HasMore      bool     `json:"has_more"`
	Gap          *gapJSON `json:"gap,omitempty"`
	Rebase       bool     `json:"rebase"`
	RebaseReason string   `json:"rebase_reason,omitempty"`
	Incomplete   bool     `json:"incomplete"`
	Left         bool     `json:"left,omitempty"`
	// Direct conversations: the peer's delivered and read seq.
	PeerDeliveredSeq *uint64           `json:"peer_delivered_seq,omitempty"`
	PeerReadSeq      *uint64           `json:"peer_read_seq,omitempty"`
	Messages         []json.RawMessage `json:"messages"`
}

type summaryJSON struct {
	convHeadJSON
	Mentions int `json:"mentions"`
}

// parseSync validates a sync body; nothing is read before it passes.
func (s *Server) parseSync(data []byte, id auth.Identity) (readpath.SyncRequest, error) {
	var body syncRequest
	if err := decodeJSON(data, &body, ""); err != nil {
		return readpath.SyncRequest{}, err
	}
	dev, err := deviceOf(id, body.DeviceID, "device_id", true)
	if err != nil {
		return readpath.SyncRequest{}, err
	}
	req := readpath.SyncRequest{User: id.User, Device: dev, Limit: DefaultSyncLimit, MaxBytes: DefaultSyncBytes,
		NowMS: s.cfg.Clock().UnixMilli(), Cursors: make(map[string]redisstore.Position, len(body.Cursors))}
	if body.Limit != nil {
		if *body.Limit < 1 || *body.Limit > DefaultSyncLimit {
			return req, badRequest("limit", "%d is outside 1..%d", *body.Limit, DefaultSyncLimit)
		}
		req.Limit = *body.Limit
	}
	if body.MaxBytes != nil {
		if *body.MaxBytes < MinSyncBytes || *body.MaxBytes > MaxSyncBytes {
			return req, badRequest("max_bytes", "%d is outside %d..%d", *body.MaxBytes, MinSyncBytes, MaxSyncBytes)
		}
		req.MaxBytes = *body.MaxBytes
	}
	if body.MentionsAfter != nil {
		m, err := readpath.ParseMentionMark(*body.MentionsAfter)
		if err != nil || schemas.ValidID("mentions_after", m.Conv) != nil {
			return req, badRequest("mentions_after", "is not a mark an answer gave in mentions_next")
		}
		req.MentionsAfter = &m
	}
	if len(body.Cursors) > s.cfg.MaxCursors {
		return req, badRequest("cursors", "holds %d cursors, more than %d", len(body.Cursors), s.cfg.MaxCursors)
	}
	for _, conv := range sortedKeys(body.Cursors) {
		raw := body.Cursors[conv]
		field := "cursors." + conv
		if err := schemas.ValidID("conv_id", conv); err != nil {
			return req, invalidField("cursors", err)
		}
		var c cursorJSON
		if err := decodeJSON(raw, &c, field); err != nil {
			return req, err
		}
		if err := seqInRange(field+".seq", c.Seq); err != nil {
			return req, err
		}
		if err := seqInRange(field+".epoch", c.Epoch); err != nil {
			return req, err
		}
		if c.Seq > 0 && c.Epoch == 0 {
			return req, badRequest(field+".epoch", "is required with a seq above 0 (take it from the answer that brought the seq)")
		}
		req.Cursors[conv] = redisstore.Position{Seq: c.Seq, Epoch: c.Epoch}
	}
	return req, nil
}

// sync answers POST /v1/sync.
func (s *Server) sync(r *http.Request, id auth.Identity) (int, any, error) {
	data, aerr := readBody(r)
	if aerr != nil {
		return 0, nil, aerr
	}
	req, err := s.parseSync(data, id)
	if err != nil {
		return 0, nil, err
	}
	sz := newSyncSizer(r.Context(), req.Device, s.openMessage)
	sz.shared = s.encoded
	req.Sizer = sz
	res, err := s.reads.Sync(r.Context(), req)
	if err == nil {
		err = sz.err
	}
	if err != nil {
		return 0, nil, err
	}
	types := make(map[string]schemas.ConvType, len(res.Convs))
	for _, c := range res.Convs {
		types[c.Conv] = c.Type
	}
	if sz.peers, err = s.peerCursors(r.Context(), id.User, types); err != nil {
		return 0, nil, err
	}
	var out any
	if parseAcceptEncoding(r.Header.Values("Accept-Encoding")).choose(minCodedBytes) == codingZstd {
		out, err = sz.encodeZstd(res, s.coders.zstd, s.frames)
	} else {
		out, err = sz.encode(res)
	}
	if err != nil {
		return 0, nil, fmt.Errorf("encode sync answer: %w", err)
	}
	s.observeSync(res)
	return http.StatusOK, out, nil
}

func (s *Server) observeSync(res *readpath.SyncResult) {
	n := len(res.Mentions)
	for _, c := range res.Convs {
		n += len(c.Messages)
		if c.Rebase {
			s.metrics.rebases.WithLabelValues(c.RebaseReason).Inc()
		}
	}
	s.metrics.syncMsgs.Observe(float64(n))
}

func convJSON(c *readpath.SyncConv, msgs []json.RawMessage) syncConvJSON {
	if msgs == nil {
		msgs = []json.RawMessage{}
	}
	out := syncConvJSON{convHeadJSON: convHead(c.Conv, c.Type, c.Large, c.Epoch, c.MaxSeq, c.Unread),
		HasMore: c.HasMore, Rebase: c.Rebase, RebaseReason: c.RebaseReason, Incomplete: c.Incomplete, Left: c.Left, Messages: msgs}
	if c.Gap != nil {
		out.Gap = &gapJSON{From: c.Gap.From, To: c.Gap.To}
	}
	return out
}

func summaryOf(s readpath.SyncSummary) summaryJSON {
	return summaryJSON{convHeadJSON: convHead(s.Conv, s.Type, s.Large, s.Epoch, s.MaxSeq, s.Unread), Mentions: s.Mentions}
}

// sortedKeys is for deterministic iteration in tests and logs.
func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
