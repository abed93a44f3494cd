package client

import (
	"encoding/json"
	"errors"
)

// The large answers (a sync answer, a page of messages, the conversation
// list) decoded by the reader of jsonread.go, field by field: through
// encoding/json their decode was most of what a client spent on a
// reconnect (reflection on every field, the input checked in one pass and
// read in another). The values are the ones decodeReflect gives.

// gap and summary are the anonymous types of SyncConv.Gap and
// SyncResponse.Summaries' elements.
type (
	gap = struct {
		From uint64 `json:"from"`
		To   uint64 `json:"to"`
	}
	summary = struct {
		ConvID string `json:"conv_id"`
	}
)

func (r *SyncResponse) decodeWire(data []byte) error {
	return walkAnswer(r, data, (*jsonReader).syncResponse, r.decodeReflect)
}

func (p *Page) decodeWire(data []byte) error {
	return walkAnswer(p, data, (*jsonReader).page, p.decodeReflect)
}

// decodeConvList decodes a page of the conversation list; it replaces l
// (json.Unmarshal would merge into it: the client decodes into a new one).
// A function, not a method: the list's type is the wire's.
func decodeConvList(l *ConvList, data []byte) error {
	return walkAnswer(l, data, (*jsonReader).convList, func(d []byte) error { return decodeConvListReflect(l, d) })
}

// walkAnswer reads data into a new value with walk and puts it in dst; an
// answer of a shape left to encoding/json (errReflectOnly) is decoded by
// reflect instead.
func walkAnswer[T any](dst *T, data []byte, walk func(*jsonReader, *T), reflect func([]byte) error) error {
	var out T
	rd := newJSONReader(data)
	walk(rd, &out)
	err := rd.End()
	rd.release()
	if errors.Is(err, errReflectOnly) {
		return reflect(data)
	}
	if err != nil {
		return err
	}
	*dst = out
	return nil
}

func decodeConvListReflect(l *ConvList, data []byte) error {
	var out ConvList
	if err := json.Unmarshal(data, &out); err != nil {
		return err
	}
	*l = out
	return nil
}

// Each walker below reads one object into a new value through object: a
// field is read once, and a key read twice ends the walk (the answer goes
// to encoding/json, see errReflectOnly). A null leaves a field as it is.
// The keys are each type's, for unknown to tell a key in another case.

var syncResponseKeys = []string{"resync", "mentions", "conversations", "summaries", "omitted", "mentions_more",
	"mentions_next"}

func (r *jsonReader) syncResponse(out *SyncResponse) {
	r.object(syncResponseKeys, func(k []byte) int {
		switch string(k) {
		case "resync":
			r.bool(&out.Resync)
			return 0
		case "mentions":
			r.mentions(&out.Mentions)
			return 1
		case "conversations":
			r.syncConvs(&out.Conversations)
			return 2
		case "summaries":
			r.summaries(&out.Summaries)
			return 3
		case "omitted":
			r.int(&out.Omitted)
			return 4
		case "mentions_more":
			r.bool(&out.MentionsMore)
			return 5
		case "mentions_next":
			r.str(&out.MentionsNext)
			return 6
		}
		return -1
	})
}

func (r *jsonReader) mentions(dst *[]SyncMention) { readArray(r, dst, (*jsonReader).mention) }

var mentionKeys = []string{"conv_id", "all", "message"}

func (r *jsonReader) mention(m *SyncMention) {
	r.object(mentionKeys, func(k []byte) int {
		switch string(k) {
		case "conv_id":
			r.name(&m.ConvID)
			return 0
		case "all":
			r.bool(&m.All)
			return 1
		case "message":
			r.message(&m.Message)
			return 2
		}
		return -1
	})
}

func (r *jsonReader) syncConvs(dst *[]SyncConv) { readArray(r, dst, (*jsonReader).syncConv) }

var syncConvKeys = []string{"conv_id", "kind", "large", "epoch", "max_seq", "unread", "has_more", "gap",
	"rebase", "rebase_reason", "incomplete", "left", "messages"}

func (r *jsonReader) syncConv(c *SyncConv) {
	r.object(syncConvKeys, func(k []byte) int {
		switch string(k) {
		case "conv_id":
			r.name(&c.ConvID)
			return 0
		case "kind":
			r.word(&c.Kind)
			return 1
		case "large":
			r.bool(&c.Large)
			return 2
		case "epoch":
			r.uint(&c.Epoch)
			return 3
		case "max_seq":
			r.uint(&c.MaxSeq)
			return 4
		case "unread":
			r.uint(&c.Unread)
			return 5
		case "has_more":
			r.bool(&c.HasMore)
			return 6
		case "gap":
			r.gap(&c.Gap)
			return 7
		case "rebase":
			r.bool(&c.Rebase)
			return 8
		case "rebase_reason":
			r.str(&c.RebaseReason)
			return 9
		case "incomplete":
			r.bool(&c.Incomplete)
			return 10
		case "left":
			r.bool(&c.Left)
			return 11
		case "messages":
			r.messages(&c.Messages)
			return 12
		}
		return -1
	})
	for i := range c.Messages {
		c.Messages[i].fromSlice(c.ConvID, c.Epoch, c.Kind)
	}
}

var gapKeys = []string{"from", "to"}

func (r *jsonReader) gap(dst **gap) {
	if r.Null() {
		*dst = nil
		return
	}
	g := new(gap)
	opened := r.object(gapKeys, func(k []byte) int {
		switch string(k) {
		case "from":
			r.uint(&g.From)
			return 0
		case "to":
			r.uint(&g.To)
			return 1
		}
		return -1
	})
	if opened {
		*dst = g
	}
}

func (r *jsonReader) summaries(dst *[]summary) { readArray(r, dst, (*jsonReader).summary) }

var summaryKeys = []string{"conv_id"}

func (r *jsonReader) summary(s *summary) {
	r.object(summaryKeys, func(k []byte) int {
		if string(k) == "conv_id" {
			r.name(&s.ConvID)
			return 0
		}
		return -1
	})
}

var pageKeys = []string{"conv_id", "epoch", "conv_type", "max_seq", "first_seq", "has_more", "incomplete", "messages"}

func (r *jsonReader) page(p *Page) {
	r.object(pageKeys, func(k []byte) int {
		switch string(k) {
		case "conv_id":
			r.name(&p.ConvID)
			return 0
		case "epoch":
			r.uint(&p.Epoch)
			return 1
		case "conv_type":
			r.word(&p.ConvType)
			return 2
		case "max_seq":
			r.uint(&p.MaxSeq)
			return 3
		case "first_seq":
			r.uint(&p.FirstSeq)
			return 4
		case "has_more":
			r.bool(&p.HasMore)
			return 5
		case "incomplete":
			r.bool(&p.Incomplete)
			return 6
		case "messages":
			r.messages(&p.Messages)
			return 7
		}
		return -1
	})
	for i := range p.Messages {
		p.Messages[i].fromSlice(p.ConvID, p.Epoch, p.ConvType)
	}
}

// messages reads an array of messages. They are read into a buffer the
// reader keeps and copied once into a slice of their number: appending to
// the answer's own slice would copy them at every growth.
func (r *jsonReader) messages(dst *[]Message) {
	if !r.Open('[') {
		if r.Err() == nil {
			*dst = nil
		}
		return
	}
	buf := r.msgs[:0]
	for first := true; r.More(&first, ']'); {
		buf = append(buf, Message{})
		r.message(&buf[len(buf)-1])
	}
	out := make([]Message, len(buf))
	copy(out, buf)
	clear(buf)
	r.msgs = buf[:0]
	*dst = out
}

var messageKeys = []string{"conv_id", "seq", "epoch", "write_time_ms", "client_msg_id", "conv_type", "kind", "sender",
	"recipients", "mentions", "mention_all", "content_type", "body", "send_time_ms", "text"}

// message reads a message in either form. A text body ("text") is the
// body whatever "body" says, and without a content type it is text/plain,
// as wireMessage.message has it.
func (r *jsonReader) message(m *Message) {
	var text []byte
	hasText := false
	r.object(messageKeys, func(k []byte) int {
		switch string(k) {
		case "conv_id":
			r.name(&m.ConvID)
			return 0
		case "seq":
			r.uint(&m.Seq)
			return 1
		case "epoch":
			r.uint(&m.Epoch)
			return 2
		case "write_time_ms":
			r.int64(&m.WriteTimeMS)
			return 3
		case "client_msg_id":
			r.str(&m.ClientMsgID)
			return 4
		case "conv_type":
			r.word(&m.ConvType)
			return 5
		case "kind":
			r.word(&m.Kind)
			return 6
		case "sender":
			r.name(&m.Sender)
			return 7
		case "recipients":
			r.strings(&m.Recipients)
			return 8
		case "mentions":
			r.strings(&m.Mentions)
			return 9
		case "mention_all":
			r.bool(&m.MentionAll)
			return 10
		case "content_type":
			r.word(&m.ContentType)
			return 11
		case "body":
			r.base64Bytes(&m.Body)
			return 12
		case "send_time_ms":
			r.int64(&m.SendTimeMS)
			return 13
		case "text":
			if s, ok := r.strBytes(); ok {
				text, hasText = r.keepText(s), true
			}
			return 14
		}
		return -1
	})
	if hasText {
		m.Body = text
		if m.ContentType == "" {
			m.ContentType = "text/plain"
		}
	}
}

var convListKeys = []string{"conversations", "next"}

func (r *jsonReader) convList(l *ConvList) {
	r.object(convListKeys, func(k []byte) int {
		switch string(k) {
		case "conversations":
			r.convItems(&l.Conversations)
			return 0
		case "next":
			r.str(&l.Next)
			return 1
		}
		return -1
	})
}

func (r *jsonReader) convItems(dst *[]ConvItem) { readArray(r, dst, (*jsonReader).convItem) }

var convItemKeys = []string{"conv_id", "kind", "large", "unread", "last_seq", "read_seq", "last_active_ms", "preview",
	"mentions", "acked_seq", "left", "peer_delivered_seq", "peer_read_seq"}

func (r *jsonReader) convItem(c *ConvItem) {
	r.object(convItemKeys, func(k []byte) int {
		switch string(k) {
		case "conv_id":
			r.name(&c.ConvID)
			return 0
		case "kind":
			r.word(&c.Kind)
			return 1
		case "large":
			r.bool(&c.Large)
			return 2
		case "unread":
			r.uint(&c.Unread)
			return 3
		case "last_seq":
			r.uint(&c.LastSeq)
			return 4
		case "read_seq":
			r.uint(&c.ReadSeq)
			return 5
		case "last_active_ms":
			r.int64(&c.LastActiveMS)
			return 6
		case "preview":
			r.preview(&c.Preview)
			return 7
		case "mentions":
			r.int(&c.Mentions)
			return 8
		case "acked_seq":
			r.uint(&c.AckedSeq)
			return 9
		case "left":
			r.bool(&c.Left)
			return 10
		case "peer_delivered_seq":
			r.uintPtr(&c.PeerDeliveredSeq)
			return 11
		case "peer_read_seq":
			r.uintPtr(&c.PeerReadSeq)
			return 12
		}
		return -1
	})
}

var previewKeys = []string{"seq", "sender", "ts", "text"}

func (r *jsonReader) preview(dst **Preview) {
	if r.Null() {
		*dst = nil
		return
	}
	p := new(Preview)
	opened := r.object(previewKeys, func(k []byte) int {
		switch string(k) {
		case "seq":
			r.uint(&p.Seq)
			return 0
		case "sender":
			r.name(&p.Sender)
			return 1
		case "ts":
			r.int64(&p.TS)
			return 2
		case "text":
			r.str(&p.Text)
			return 3
		}
		return -1
	})
	if opened {
		*dst = p
	}
}
