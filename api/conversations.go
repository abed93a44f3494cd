package api

import (
	"encoding/base64"
	"github.com/offlinebox/offlinebox/wire"
	"net/http"
	"strconv"
	"strings"

	"github.com/offlinebox/offlinebox/auth"
	"github.com/offlinebox/offlinebox/redisstore/readpath"
	"github.com/offlinebox/offlinebox/schemas"
)

// The list's shapes are the contract's, written by encoding/json.
type (
	conversationListJSON = wire.ConvList
	conversationJSON     = wire.ConvItem
)

// listConversations answers GET /v1/conversations: one page of the user's
// conversations, most recently active first. It reads the inbox index
// only, never timelines, so it is fast whatever the backlog.
func (s *Server) listConversations(r *http.Request, id auth.Identity) (int, any, error) {
	q := r.URL.Query()
	if err := onlyParams(q, "limit", "cursor", "device_id"); err != nil {
		return 0, nil, err
	}
	limit, err := intParam(q.Get("limit"), "limit", DefaultListLimit, 1, MaxListLimit)
	if err != nil {
		return 0, nil, err
	}
	after, err := parseListCursor(q.Get("cursor"))
	if err != nil {
		return 0, nil, err
	}
	dev, err := deviceOf(id, q.Get("device_id"), "device_id", false)
	if err != nil {
		return 0, nil, err
	}
	page, err := s.reads.ListConversations(r.Context(), id.User, dev, after, limit)
	if err != nil {
		return 0, nil, err
	}
	out := conversationListJSON{Conversations: make([]conversationJSON, len(page.Items))}
	for i, it := range page.Items {
		c := conversationJSON{ConvID: it.Conv, Kind: schemas.ConvTypeName(it.Type), Large: it.Large, Unread: it.Unread, LastSeq: it.LastSeq,
			ReadSeq: it.ReadSeq, LastActiveMS: it.Activity, Mentions: it.Mentions, AckedSeq: it.Acked, Left: it.Left}
		if p := it.Preview; p != nil {
			text, err := s.openPreview(r.Context(), it.Conv, p.Text)
			if err != nil {
				return 0, nil, err
			}
			c.Preview = &wire.Preview{Seq: p.Seq, Sender: p.Sender, TS: p.TS, Text: text}
		}
		out.Conversations[i] = c
	}
	if page.Next != nil {
		out.Next = formatListCursor(*page.Next)
	}
	if err := s.addPeerReceipts(r.Context(), id.User, page.Items, out.Conversations); err != nil {
		return 0, nil, err
	}
	return http.StatusOK, out, nil
}

// The list cursor is opaque to clients: base64url("ACTIVITY.CONV").
func formatListCursor(c readpath.ListCursor) string {
	return base64.RawURLEncoding.EncodeToString([]byte(strconv.FormatInt(c.Activity, 10) + "." + c.Conv))
}

func parseListCursor(v string) (readpath.ListCursor, error) {
	if v == "" {
		return readpath.ListCursor{}, nil
	}
	raw, err := base64.RawURLEncoding.DecodeString(v)
	if err != nil {
		return readpath.ListCursor{}, badRequest("cursor", "is not a cursor this server gave")
	}
	act, conv, ok := strings.Cut(string(raw), ".")
	n, err := strconv.ParseInt(act, 10, 64)
	if !ok || err != nil || schemas.ValidID("cursor", conv) != nil {
		return readpath.ListCursor{}, badRequest("cursor", "is not a cursor this server gave")
	}
	return readpath.ListCursor{Activity: n, Conv: conv}, nil
}
