package api

import (
	"context"
	"encoding/json"

	"github.com/offlinebox/offlinebox/redisstore"
	"github.com/offlinebox/offlinebox/redisstore/readpath"
	"github.com/offlinebox/offlinebox/schemas"
)

// syncSizer measures the parts of the answer by encoding them, and keeps
// the encodings so that the answer is assembled from them: the
// readpath.SyncSizer the budget is counted with (redisstore/sync_budget.go).
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

func (z *syncSizer) Mention(m readpath.SyncMention) int {
	b, _ := json.Marshal(mentionJSON{ConvID: m.Conv, All: m.All, Message: z.message(m.Message, fullForm)})
	return len(b) + 1
}

// Conv is the block without messages, with room for a gap and the flags
// that are decided once the messages are.
func (z *syncSizer) Conv(c *readpath.SyncConv) int {
	b, _ := json.Marshal(convJSON(c, nil))
	return len(b) + 1 + len(`,"gap":{"from":18446744073709551615,"to":18446744073709551615}`) + len(`,"rebase_reason":"retention"`) +
		len(`,"peer_delivered_seq":18446744073709551615,"peer_read_seq":18446744073709551615`)
}

func (z *syncSizer) Message(m *schemas.Sequenced) int { return len(z.message(m, sliceForm)) + 1 }

func (z *syncSizer) Summary(sm readpath.SyncSummary) int {
	b, _ := json.Marshal(summaryOf(sm))
	return len(b) + 1
}

// Messages measures one slice read's entries (readpath.SyncReadSizer),
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
