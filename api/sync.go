package api

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sort"
	"strconv"

	"github.com/klauspost/compress/zstd"

	"github.com/offlinebox/offlinebox/auth"
	"github.com/offlinebox/offlinebox/redisstore"
	"github.com/offlinebox/offlinebox/schemas"
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

type cursorJSON struct {
	Seq   uint64 `json:"seq"`
	Epoch uint64 `json:"epoch"`
}

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

type syncConvJSON struct {
	ConvID       string   `json:"conv_id"`
	Kind         string   `json:"kind"`
	Large        bool     `json:"large"`
	Epoch        uint64   `json:"epoch"`
	MaxSeq       uint64   `json:"max_seq"`
	Unread       uint64   `json:"unread"`
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
	ConvID   string `json:"conv_id"`
	Kind     string `json:"kind"`
	Large    bool   `json:"large"`
	Epoch    uint64 `json:"epoch"`
	MaxSeq   uint64 `json:"max_seq"`
	Unread   uint64 `json:"unread"`
	Mentions int    `json:"mentions"`
}

// parseSync validates a sync body; nothing is read before it passes.
func (s *Server) parseSync(data []byte, id auth.Identity) (redisstore.SyncRequest, error) {
	var body syncRequest
	if err := decodeJSON(data, &body, ""); err != nil {
		return redisstore.SyncRequest{}, err
	}
	dev, err := deviceOf(id, body.DeviceID, "device_id", true)
	if err != nil {
		return redisstore.SyncRequest{}, err
	}
	req := redisstore.SyncRequest{User: id.User, Device: dev, Limit: DefaultSyncLimit, MaxBytes: DefaultSyncBytes,
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
		m, err := redisstore.ParseMentionMark(*body.MentionsAfter)
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
	res, err := s.router.Sync(r.Context(), req)
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

func (s *Server) observeSync(res *redisstore.SyncResult) {
	n := len(res.Mentions)
	for _, c := range res.Convs {
		n += len(c.Messages)
		if c.Rebase {
			s.metrics.rebases.WithLabelValues(c.RebaseReason).Inc()
		}
	}
	s.metrics.syncMsgs.Observe(float64(n))
}

// syncSizer measures the parts of the answer by encoding them, and keeps
// the encodings so that the answer is assembled from them: the
// redisstore.SyncSizer the budget is counted with (redisstore/sync_budget.go).
//
// Sealed bodies are opened as they are encoded: the first failure is kept
// in err and fails the answer.
type syncSizer struct {
	ctx    context.Context
	device string
	open   func(context.Context, *schemas.Sequenced) (*schemas.Sequenced, error)
	// msgs are the encodings made one at a time (mentions, a lone
	// message), and those of reads once a lookup missed reads.
	msgs map[encodedAs]json.RawMessage
	// reads are the slice reads measured, by their newest entry: a
	// conversation's messages are the newest of a read, so a run of them
	// is found with one lookup, not one per message. A table entry per
	// message was a tenth of the API server's CPU in a reconnect storm.
	reads map[*schemas.Sequenced]measuredRead
	// measured is every read in order; msgs holds the encodings of the
	// first indexed of them too.
	measured []measuredRead
	indexed  int
	// shared are the slice-form encodings other syncs made of the same
	// decoded entries (nil: none).
	shared *sharedEncodings
	// peers are the peer cursors of direct conversations, read once the
	// answer is cut (the budget counts room for them).
	peers map[string]redisstore.MemberReceipts
	err   error
}

// measuredRead is one slice read's entries and their slice-form encodings.
type measuredRead struct {
	entries []*schemas.Sequenced
	encs    []json.RawMessage
}

// syncSizerReads is room for the slice reads an answer of the default
// budget measures (the founding scenario's users are in 20 groups), so
// that the table does not grow while the budget is counted.
const syncSizerReads = 32

func newSyncSizer(ctx context.Context, device string, open func(context.Context, *schemas.Sequenced) (*schemas.Sequenced, error)) *syncSizer {
	return &syncSizer{ctx: ctx, device: device, open: open, msgs: map[encodedAs]json.RawMessage{},
		reads: make(map[*schemas.Sequenced]measuredRead, syncSizerReads)}
}

// encodedAs names one encoding of a message: a mention's is the full form,
// a slice's the slice form.
type encodedAs struct {
	m    *schemas.Sequenced
	form messageForm
}

// Envelope is the answer without any element, with room for its counters
// and the lane's mark (mentions_next: two numbers and a conversation id,
// which JSON may escape to twice its bytes).
func (z *syncSizer) Envelope() int {
	b, _ := json.Marshal(syncResponse{DeviceID: z.device, MentionsMore: true})
	return len(b) + 16 + len(`,"mentions_next":""`) + 2*20 + 2 + 2*schemas.MaxIDBytes
}

func (z *syncSizer) Mention(m redisstore.SyncMention) int {
	b, _ := json.Marshal(mentionJSON{ConvID: m.Conv, All: m.All, Message: z.message(m.Message, fullForm)})
	return len(b) + 1
}

// Conv is the block without messages, with room for a gap and the flags
// that are decided once the messages are.
func (z *syncSizer) Conv(c *redisstore.SyncConv) int {
	b, _ := json.Marshal(convJSON(c, nil))
	return len(b) + 1 + len(`,"gap":{"from":18446744073709551615,"to":18446744073709551615}`) + len(`,"rebase_reason":"retention"`) +
		len(`,"peer_delivered_seq":18446744073709551615,"peer_read_seq":18446744073709551615`)
}

func (z *syncSizer) Message(m *schemas.Sequenced) int { return len(z.message(m, sliceForm)) + 1 }

func (z *syncSizer) Summary(sm redisstore.SyncSummary) int {
	b, _ := json.Marshal(summaryOf(sm))
	return len(b) + 1
}

// Messages measures one slice read's entries (redisstore.SyncReadSizer),
// with the encodings another sync made of the same read if there are.
func (z *syncSizer) Messages(entries []*schemas.Sequenced, sizes []int) {
	encs, ok := z.shared.get(entries)
	if !ok {
		encs = make([]json.RawMessage, len(entries))
		opened := true
		for i, m := range entries {
			var err error
			if encs[i], err = z.encodeMessage(m, sliceForm); err != nil {
				opened = false
			}
		}
		if opened {
			z.shared.put(entries, encs)
		}
	}
	for i := range entries {
		sizes[i] = len(encs[i]) + 1
	}
	if len(entries) > 0 {
		r := measuredRead{entries: entries, encs: encs}
		z.reads[entries[len(entries)-1]] = r
		z.measured = append(z.measured, r)
	}
}

// runEncodings is the slice-form encodings of run: without a copy when
// run is the newest entries of one read, as a conversation's messages are.
func (z *syncSizer) runEncodings(run []*schemas.Sequenced) []json.RawMessage {
	if len(run) == 0 {
		return nil
	}
	if r, ok := z.reads[run[len(run)-1]]; ok && len(r.entries) >= len(run) {
		tail := r.entries[len(r.entries)-len(run):]
		same := true
		for i := range run {
			if tail[i] != run[i] {
				same = false
				break
			}
		}
		if same {
			return r.encs[len(r.encs)-len(run):]
		}
	}
	out := make([]json.RawMessage, len(run))
	for i, m := range run {
		out[i] = z.message(m, sliceForm)
	}
	return out
}

func (z *syncSizer) message(m *schemas.Sequenced, form messageForm) json.RawMessage {
	if b, ok := z.msgs[encodedAs{m, form}]; ok {
		return b
	}
	if form == sliceForm && z.indexed < len(z.measured) {
		// A message looked up alone, not as the newest of a read: the
		// reads' encodings go in msgs, each read once, rather than
		// encoding it again.
		for _, r := range z.measured[z.indexed:] {
			for i, e := range r.entries {
				z.msgs[encodedAs{e, sliceForm}] = r.encs[i]
			}
		}
		z.indexed = len(z.measured)
		if b, ok := z.msgs[encodedAs{m, form}]; ok {
			return b
		}
	}
	b, _ := z.encodeMessage(m, form)
	z.msgs[encodedAs{m, form}] = b
	return b
}

// encodeMessage opens m and encodes it in form. A body
// that does not open is kept in z.err (it fails the answer) and encoded
// sealed.
func (z *syncSizer) encodeMessage(m *schemas.Sequenced, form messageForm) (json.RawMessage, error) {
	open, err := z.open(z.ctx, m)
	if err != nil {
		if z.err == nil {
			z.err = err
		}
		open = m
	}
	return json.RawMessage(appendMessageJSON(nil, open, form)), err
}

// encode assembles the answer from the encodings the budget was counted
// on. It writes what json.Marshal(syncResponse{...}) wrote, byte for byte,
// but splices the message encodings in as they are: json.Marshal re-scans
// every json.RawMessage once per level of nesting, which cost more than
// encoding the messages did.
func (z *syncSizer) encode(res *redisstore.SyncResult) ([]byte, error) {
	w := &answerWriter{z: z, out: make([]byte, 0, z.sizeHint(res))}
	if err := z.write(w, res); err != nil {
		return nil, err
	}
	return w.out, nil
}

// encodeZstd is encode compressed in zstd as spliced frames
// (sync_frames.go): the runs of messages already compressed by another
// answer are neither copied nor compressed again.
func (z *syncSizer) encodeZstd(res *redisstore.SyncResult, enc *zstd.Encoder, frames *sharedFrames) (*codedAnswer, error) {
	w := &answerWriter{z: z, out: make([]byte, 0, 4096), enc: enc, shared: frames, frames: make([][]byte, 0, 2*len(res.Convs)+2)}
	if err := z.write(w, res); err != nil {
		return nil, err
	}
	return w.finish(), nil
}

// write writes the answer to w.
func (z *syncSizer) write(w *answerWriter, res *redisstore.SyncResult) error {
	w.out = append(w.out, `{"device_id":`...)
	w.out = appendJSONString(w.out, z.device)
	w.out = append(w.out, `,"resync":`...)
	w.out = strconv.AppendBool(w.out, res.Resync)
	w.out = append(w.out, `,"mentions":[`...)
	for i, m := range res.Mentions {
		if i > 0 {
			w.out = append(w.out, ',')
		}
		w.out = append(w.out, `{"conv_id":`...)
		w.out = appendJSONString(w.out, m.Conv)
		w.out = append(w.out, `,"all":`...)
		w.out = strconv.AppendBool(w.out, m.All)
		w.out = append(w.out, `,"message":`...)
		w.out = append(w.out, z.message(m.Message, fullForm)...)
		w.out = append(w.out, '}')
	}
	w.out = append(w.out, `],"mentions_more":`...)
	w.out = strconv.AppendBool(w.out, res.MentionsMore)
	if res.MentionsNext != nil {
		w.out = append(w.out, `,"mentions_next":`...)
		w.out = appendJSONString(w.out, res.MentionsNext.String())
	}
	w.out = append(w.out, `,"conversations":[`...)
	for i := range res.Convs {
		if i > 0 {
			w.out = append(w.out, ',')
		}
		if err := z.writeConv(w, &res.Convs[i]); err != nil {
			return err
		}
	}
	w.out = append(w.out, `],"summaries":[`...)
	for i, sm := range res.Summaries {
		if i > 0 {
			w.out = append(w.out, ',')
		}
		b, err := json.Marshal(summaryOf(sm))
		if err != nil {
			return err
		}
		w.out = append(w.out, b...)
	}
	w.out = append(w.out, `],"omitted":`...)
	w.out = strconv.AppendInt(w.out, int64(res.Omitted), 10)
	w.out = append(w.out, '}')
	return nil
}

// writeConv writes a conversation block: its fields as json.Marshal
// writes them (messages is the last one), then the messages' encodings,
// a run per slice read they came from.
func (z *syncSizer) writeConv(w *answerWriter, c *redisstore.SyncConv) error {
	cj := convJSON(c, nil)
	if p, ok := z.peers[c.Conv]; ok {
		d, r := p.Delivered, p.Read
		cj.PeerDeliveredSeq, cj.PeerReadSeq = &d, &r
	}
	head, err := json.Marshal(cj)
	if err != nil {
		return err
	}
	const emptyTail = `[]}`
	w.out = append(w.out, head[:len(head)-len(emptyTail)]...)
	w.out = append(w.out, '[')
	older := min(max(c.Older, 0), len(c.Messages))
	if older > 0 {
		w.messages(c.Messages[:older])
		if older < len(c.Messages) {
			w.out = append(w.out, ',')
		}
	}
	if older < len(c.Messages) {
		w.messages(c.Messages[older:])
	}
	w.out = append(w.out, ']', '}')
	return nil
}

// sizeHint is the answer's length give or take the blocks' headers, so
// that the buffer grows once or not at all.
func (z *syncSizer) sizeHint(res *redisstore.SyncResult) int {
	n := 256 + 512*(len(res.Mentions)+len(res.Convs)+len(res.Summaries))
	for _, m := range res.Mentions {
		n += len(z.message(m.Message, fullForm))
	}
	for i := range res.Convs {
		for _, b := range z.runEncodings(res.Convs[i].Messages) {
			n += len(b) + 1
		}
	}
	return n
}

func convJSON(c *redisstore.SyncConv, msgs []json.RawMessage) syncConvJSON {
	if msgs == nil {
		msgs = []json.RawMessage{}
	}
	out := syncConvJSON{ConvID: c.Conv, Kind: schemas.ConvTypeName(c.Type), Large: c.Large, Epoch: c.Epoch, MaxSeq: c.MaxSeq, Unread: c.Unread,
		HasMore: c.HasMore, Rebase: c.Rebase, RebaseReason: c.RebaseReason, Incomplete: c.Incomplete, Left: c.Left, Messages: msgs}
	if c.Gap != nil {
		out.Gap = &gapJSON{From: c.Gap.From, To: c.Gap.To}
	}
	return out
}

func summaryOf(s redisstore.SyncSummary) summaryJSON {
	return summaryJSON{ConvID: s.Conv, Kind: schemas.ConvTypeName(s.Type), Large: s.Large, Epoch: s.Epoch, MaxSeq: s.MaxSeq, Unread: s.Unread, Mentions: s.Mentions}
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
