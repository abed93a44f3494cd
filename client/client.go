package client

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/offlinebox/offlinebox/wire"
)

// Message is a message as the API's JSON shows it (api/openapi.yaml): a
// text body, which the API sends as the string "text" (without a
// content_type when text/plain), is in Body as any other; a message of a slice (a sync conversation, a page), which the API
// sends without conv_id, epoch and conv_type, gets them from its slice.
type Message struct {
	ConvID      string   `json:"conv_id"`
	Seq         uint64   `json:"seq"`
	Epoch       uint64   `json:"epoch"`
	WriteTimeMS int64    `json:"write_time_ms"`
	ClientMsgID string   `json:"client_msg_id"`
	ConvType    string   `json:"conv_type"`
	Kind        string   `json:"kind"`
	Sender      string   `json:"sender"`
	Recipients  []string `json:"recipients,omitempty"`
	Mentions    []string `json:"mentions,omitempty"`
	MentionAll  bool     `json:"mention_all,omitempty"`
	ContentType string   `json:"content_type,omitempty"`
	Body        []byte   `json:"body"`
	SendTimeMS  int64    `json:"send_time_ms,omitempty"`
}

// UnmarshalJSON reads both forms of a message and both forms of a body.
func (m *Message) UnmarshalJSON(data []byte) error {
	var w wireMessage
	if err := json.Unmarshal(data, &w); err != nil {
		return err
	}
	*m = w.message()
	return nil
}

// fromSlice gives a message of a slice what the slice said once.
func (m *Message) fromSlice(conv string, epoch uint64, convType string) {
	if m.ConvID == "" {
		m.ConvID = conv
	}
	if m.Epoch == 0 {
		m.Epoch = epoch
	}
	if m.ConvType == "" {
		m.ConvType = convType
	}
}

// Cursor is a position in a conversation: a seq of an epoch. It is what
// the client holds of one conversation, and where a held message sits.
type Cursor = wire.Cursor

// SyncRequest is the body of POST /v1/sync.
type SyncRequest struct {
	Cursors  map[string]Cursor `json:"cursors,omitempty"`
	Limit    int               `json:"limit,omitempty"`
	MaxBytes int               `json:"max_bytes,omitempty"`
	// MentionsAfter continues the mention lane: the MentionsNext of the
	// answer before.
	MentionsAfter string `json:"mentions_after,omitempty"`
}

// SyncMention is one pending mention of a sync answer.
type SyncMention struct {
	ConvID  string  `json:"conv_id"`
	All     bool    `json:"all"`
	Message Message `json:"message"`
}

// SyncConv is one conversation of a sync answer.
type SyncConv struct {
	ConvID  string `json:"conv_id"`
	Kind    string `json:"kind"`
	Large   bool   `json:"large"`
	Epoch   uint64 `json:"epoch"`
	MaxSeq  uint64 `json:"max_seq"`
	Unread  uint64 `json:"unread"`
	HasMore bool   `json:"has_more"`
	Gap     *struct {
		From uint64 `json:"from"`
		To   uint64 `json:"to"`
	} `json:"gap"`
	Rebase       bool   `json:"rebase"`
	RebaseReason string `json:"rebase_reason"`
	Incomplete   bool   `json:"incomplete"`
	// Left: the user left this group; nothing comes after MaxSeq.
	Left     bool      `json:"left"`
	Messages []Message `json:"messages"`
}

// SyncResponse is the answer of POST /v1/sync.
type SyncResponse struct {
	Resync bool `json:"resync"`
	// Mentions: a page of the pending mentions, newest first, without
	// those the conversations' slices carry.
	Mentions []SyncMention `json:"mentions"`
	// MentionsMore: more pending mentions than this page held; a sync
	// with MentionsAfter = MentionsNext continues the lane.
	MentionsMore  bool       `json:"mentions_more"`
	MentionsNext  string     `json:"mentions_next"`
	Conversations []SyncConv `json:"conversations"`
	Summaries     []struct {
		ConvID string `json:"conv_id"`
	} `json:"summaries"`
	Omitted int `json:"omitted"`
}

// Preview is the last message of a conversation as the list shows it.
type Preview = wire.Preview

// ConvItem is one conversation of the list.
type ConvItem = wire.ConvItem

// ConvList is one page of GET /v1/conversations.
type ConvList = wire.ConvList

// Page is one page of GET /v1/conversations/{conv}/messages or /history.
type Page struct {
	ConvID     string    `json:"conv_id"`
	Epoch      uint64    `json:"epoch"`
	ConvType   string    `json:"conv_type"`
	MaxSeq     uint64    `json:"max_seq"`
	FirstSeq   uint64    `json:"first_seq"`
	HasMore    bool      `json:"has_more"`
	Incomplete bool      `json:"incomplete"`
	Messages   []Message `json:"messages"`
}

// AckItem is one conversation of POST /v1/ack.
type AckItem = wire.AckItem

// Client talks to the API as one device of one user.
type Client struct {
	Base  string
	Token string
	HTTP  *http.Client
}

// New is a client of base with a token pinned to a device.
func New(base, token string, hc *http.Client) *Client {
	if hc == nil {
		hc = &http.Client{Timeout: 60 * time.Second}
	}
	return &Client{Base: base, Token: token, HTTP: hc}
}

// do sends one request and decodes the answer into out; it returns the
// answer's body size.
func (c *Client) do(ctx context.Context, method, path string, in, out any) (int, error) {
	n, _, err := c.exchange(ctx, method, path, in, out)
	return n, err
}

// exchange sends one request and decodes its answer into out; wire is the
// answer's size as it came (compressed, when the server chose to),
// decoded its JSON's.
func (c *Client) exchange(ctx context.Context, method, path string, in, out any) (wire, decoded int, err error) {
	var body io.Reader
	if in != nil {
		data, err := json.Marshal(in)
		if err != nil {
			return 0, 0, fmt.Errorf("encode %s %s: %w", method, path, err)
		}
		body = bytes.NewReader(data)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.Base+path, body)
	if err != nil {
		return 0, 0, err
	}
	req.Header.Set("Authorization", "Bearer "+c.Token)
	req.Header.Set("Accept-Encoding", acceptEncoding)
	if in != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.HTTP.Do(req)
	if err != nil {
		return 0, 0, fmt.Errorf("%s %s: %w", method, path, err)
	}
	defer resp.Body.Close()
	raw, err := readAnswer(resp)
	if err != nil {
		return len(raw), 0, fmt.Errorf("%s %s: read answer: %w", method, path, err)
	}
	// A wire answer's decode copies what it keeps, so its decoded bytes
	// can go to the next answer.
	decode, isWire := wireDecoder(out)
	var buf *[]byte
	if isWire {
		buf = decodedBuffer()
	}
	data, err := decodeBody(resp.Header.Get("Content-Encoding"), raw, buf)
	if err != nil {
		return len(raw), 0, fmt.Errorf("%s %s: %w: %w", method, path, errDecode, err)
	}
	if resp.StatusCode/100 != 2 {
		return len(raw), len(data), fmt.Errorf("%s %s: %w", method, path, statusError(resp, data))
	}
	if out != nil {
		if isWire {
			err = decode(data)
		} else {
			err = json.Unmarshal(data, out)
		}
		if err != nil {
			return len(raw), len(data), fmt.Errorf("%s %s: %w: %w", method, path, errDecode, err)
		}
	}
	if isWire {
		recycleDecoded(buf)
	}
	return len(raw), len(data), nil
}

// readAnswer reads an answer's body, at most maxAnswerBytes of it (an
// answer that says it is longer is refused unread), into a buffer of the
// length the server said when it said one: io.ReadAll grows its buffer
// from 512 bytes, copying what it read at every step.
func readAnswer(resp *http.Response) ([]byte, error) {
	n := resp.ContentLength
	if n > maxAnswerBytes {
		return nil, fmt.Errorf("%d bytes, more than %d: %w", n, maxAnswerBytes, errTooLarge)
	}
	body := io.LimitReader(resp.Body, maxAnswerBytes+1)
	var b *bytes.Buffer
	if n < 0 {
		b = new(bytes.Buffer)
	} else {
		b = bytes.NewBuffer(make([]byte, 0, n+bytes.MinRead))
	}
	if _, err := b.ReadFrom(body); err != nil {
		return b.Bytes(), err
	}
	if b.Len() > maxAnswerBytes {
		return nil, fmt.Errorf("more than %d bytes: %w", maxAnswerBytes, errTooLarge)
	}
	return b.Bytes(), nil
}

// Conversations reads the first page of the conversation list.
func (c *Client) Conversations(ctx context.Context, limit int) (ConvList, int, error) {
	return c.ConversationsAfter(ctx, "", limit)
}

// ConversationsAfter reads the page of the conversation list that
// follows cursor (the previous page's Next; "" for the first).
func (c *Client) ConversationsAfter(ctx context.Context, cursor string, limit int) (ConvList, int, error) {
	q := url.Values{}
	q.Set("limit", strconv.Itoa(limit))
	if cursor != "" {
		q.Set("cursor", cursor)
	}
	var out ConvList
	n, err := c.do(ctx, http.MethodGet, "/v1/conversations?"+q.Encode(), nil, &out)
	return out, n, err
}

// Sync sends one catch-up request.
func (c *Client) Sync(ctx context.Context, req SyncRequest) (SyncResponse, int, error) {
	out, n, _, err := c.sync(ctx, req)
	return out, n, err
}

func (c *Client) sync(ctx context.Context, req SyncRequest) (out SyncResponse, wire, decoded int, err error) {
	wire, decoded, err = c.exchange(ctx, http.MethodPost, "/v1/sync", req, &out)
	return out, wire, decoded, err
}

// Ack acknowledges what the device stored.
func (c *Client) Ack(ctx context.Context, items []AckItem) error {
	const most = 5000
	for start := 0; start < len(items); start += most {
		part := items[start:min(start+most, len(items))]
		if _, err := c.do(ctx, http.MethodPost, "/v1/ack", map[string]any{"acks": part}, nil); err != nil {
			return err
		}
	}
	return nil
}

// PageAfter reads the oldest messages of conv above after and below
// before (0: no upper bound).
func (c *Client) PageAfter(ctx context.Context, conv string, after, before uint64, epoch uint64, limit int) (Page, int, error) {
	p, n, _, err := c.pageAfter(ctx, conv, after, before, epoch, limit, 0)
	return p, n, err
}

// pageAfter is PageAfter with a byte budget (0: the server's default, and
// the limit at most 200).
func (c *Client) pageAfter(ctx context.Context, conv string, after, before, epoch uint64, limit, maxBytes int) (out Page, wire, decoded int, err error) {
	q := url.Values{}
	if maxBytes > 0 {
		q.Set("max_bytes", strconv.Itoa(maxBytes))
	}
	q.Set("after", strconv.FormatUint(after, 10))
	setIfAny(q, "before", before)
	setIfAny(q, "epoch", epoch)
	q.Set("limit", strconv.Itoa(limit))
	wire, decoded, err = c.exchange(ctx, http.MethodGet, "/v1/conversations/"+url.PathEscape(conv)+"/messages?"+q.Encode(), nil, &out)
	return out, wire, decoded, err
}

// PageRange reads the oldest messages of conv in [from, to], a range
// named as a sync gap names it (inclusive).
func (c *Client) PageRange(ctx context.Context, conv string, from, to uint64, epoch uint64, limit int) (Page, int, error) {
	q := url.Values{}
	q.Set("from", strconv.FormatUint(from, 10))
	q.Set("to", strconv.FormatUint(to, 10))
	setIfAny(q, "epoch", epoch)
	return c.page(ctx, conv, "messages", q, limit)
}

// PageBefore reads the newest messages of conv below before, inside the
// Redis window (scrolling up).
func (c *Client) PageBefore(ctx context.Context, conv string, before uint64, limit int) (Page, int, error) {
	q := url.Values{}
	q.Set("before", strconv.FormatUint(before, 10))
	return c.page(ctx, conv, "messages", q, limit)
}

// History reads a roaming page of conv below before (0: the newest) in
// one epoch (0: the conversation's current one); the page names the epoch
// it was read in, and its messages carry it.
func (c *Client) History(ctx context.Context, conv string, epoch, before uint64, limit int) (Page, int, error) {
	q := url.Values{}
	setIfAny(q, "before", before)
	setIfAny(q, "epoch", epoch)
	return c.page(ctx, conv, "history", q, limit)
}

// page reads one page of conv from its route (messages or history) with
// the query q and limit.
func (c *Client) page(ctx context.Context, conv, route string, q url.Values, limit int) (Page, int, error) {
	q.Set("limit", strconv.Itoa(limit))
	var out Page
	n, err := c.do(ctx, http.MethodGet, "/v1/conversations/"+url.PathEscape(conv)+"/"+route+"?"+q.Encode(), nil, &out)
	return out, n, err
}

// setIfAny sets key to v unless v is 0, which the API reads as the key
// left out (the newest, the current epoch).
func setIfAny(q url.Values, key string, v uint64) {
	if v > 0 {
		q.Set(key, strconv.FormatUint(v, 10))
	}
}
