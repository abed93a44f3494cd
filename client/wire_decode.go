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

// decodeWire decodes a page of the conversation list; it replaces l
// (json.Unmarshal would merge into it: the client decodes into a new one).
func (l *ConvList) decodeWire(data []byte) error {
	return walkAnswer(l, data, (*jsonReader).convList, l.decodeReflect)
}

// walkAnswer reads data into a new value with walk and puts it in dst; an
// answer of a shape left to encoding/json (errReflectOnly) is decoded by
// reflect instead.
func walkAnswer[T any](dst *T, data []byte, walk func(*jsonReader, *T), reflect func([]byte) error) error {
	var out T
	rd := newJSONReader(data)
	walk(rd, &out)
	err := rd.end()
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

func (l *ConvList) decodeReflect(data []byte) error {
	var out ConvList
	if err := json.Unmarshal(data, &out); err != nil {
		return err
	}
	*l = out
	return nil
}

// Each walker below reads one object into a new value. A field is read
// once: seen marks it, and a key read twice ends the walk (the answer goes
// to encoding/json, see errReflectOnly). A null leaves a field as it is.

func (r *jsonReader) syncResponse(out *SyncResponse) {
	if !r.open('{') {
		return
	}
	var seen uint32
	for first := true; r.more(&first, '}'); {
		switch k := r.key(); string(k) {
		case "resync":
			r.seen(&seen, 1<<0)
			r.bool(&out.Resync)
		case "mentions":
			r.seen(&seen, 1<<1)
			r.mentions(&out.Mentions)
		case "conversations":
			r.seen(&seen, 1<<2)
			r.syncConvs(&out.Conversations)
		case "summaries":
			r.seen(&seen, 1<<3)
			r.summaries(&out.Summaries)
		case "omitted":
			r.seen(&seen, 1<<4)
			r.int(&out.Omitted)
		case "mentions_more":
			r.seen(&seen, 1<<5)
			r.bool(&out.MentionsMore)
		case "mentions_next":
			r.seen(&seen, 1<<6)
			r.str(&out.MentionsNext)
		default:
			r.unknown(k, "resync", "mentions", "conversations", "summaries", "omitted", "mentions_more", "mentions_next")
		}
	}
}

func (r *jsonReader) mentions(dst *[]SyncMention) { readArray(r, dst, (*jsonReader).mention) }

func (r *jsonReader) mention(m *SyncMention) {
	if !r.open('{') {
		return
	}
	var seen uint32
	for first := true; r.more(&first, '}'); {
		switch k := r.key(); string(k) {
		case "conv_id":
			r.seen(&seen, 1<<0)
			r.name(&m.ConvID)
		case "all":
			r.seen(&seen, 1<<1)
			r.bool(&m.All)
		case "message":
			r.seen(&seen, 1<<2)
			r.message(&m.Message)
		default:
			r.unknown(k, "conv_id", "all", "message")
		}
	}
}

func (r *jsonReader) syncConvs(dst *[]SyncConv) { readArray(r, dst, (*jsonReader).syncConv) }

func (r *jsonReader) syncConv(c *SyncConv) {
	if !r.open('{') {
		return
	}
	var seen uint32
	for first := true; r.more(&first, '}'); {
		switch k := r.key(); string(k) {
		case "conv_id":
			r.seen(&seen, 1<<0)
			r.name(&c.ConvID)
		case "kind":
			r.seen(&seen, 1<<1)
			r.word(&c.Kind)
		case "large":
			r.seen(&seen, 1<<2)
			r.bool(&c.Large)
		case "epoch":
			r.seen(&seen, 1<<3)
			r.uint(&c.Epoch)
		case "max_seq":
			r.seen(&seen, 1<<4)
			r.uint(&c.MaxSeq)
		case "unread":
			r.seen(&seen, 1<<5)
			r.uint(&c.Unread)
		case "has_more":
			r.seen(&seen, 1<<6)
			r.bool(&c.HasMore)
		case "gap":
			r.seen(&seen, 1<<7)
			r.gap(&c.Gap)
		case "rebase":
			r.seen(&seen, 1<<8)
			r.bool(&c.Rebase)
		case "rebase_reason":
			r.seen(&seen, 1<<9)
			r.str(&c.RebaseReason)
		case "incomplete":
			r.seen(&seen, 1<<10)
			r.bool(&c.Incomplete)
		case "left":
			r.seen(&seen, 1<<11)
			r.bool(&c.Left)
		case "messages":
			r.seen(&seen, 1<<12)
			r.messages(&c.Messages)
		default:
			r.unknown(k, "conv_id", "kind", "large", "epoch", "max_seq", "unread", "has_more", "gap",
				"rebase", "rebase_reason", "incomplete", "left", "messages")
		}
	}
	for i := range c.Messages {
		c.Messages[i].fromSlice(c.ConvID, c.Epoch, c.Kind)
	}
}

func (r *jsonReader) gap(dst **gap) {
	if !r.open('{') {
		if r.err == nil {
			*dst = nil
		}
		return
	}
	g := new(gap)
	var seen uint32
	for first := true; r.more(&first, '}'); {
		switch k := r.key(); string(k) {
		case "from":
			r.seen(&seen, 1<<0)
			r.uint(&g.From)
		case "to":
			r.seen(&seen, 1<<1)
			r.uint(&g.To)
		default:
			r.unknown(k, "from", "to")
		}
	}
	*dst = g
}

func (r *jsonReader) summaries(dst *[]summary) { readArray(r, dst, (*jsonReader).summary) }

func (r *jsonReader) summary(s *summary) {
	if !r.open('{') {
		return
	}
	var seen uint32
	for first := true; r.more(&first, '}'); {
		switch k := r.key(); string(k) {
		case "conv_id":
			r.seen(&seen, 1<<0)
			r.name(&s.ConvID)
		default:
			r.unknown(k, "conv_id")
		}
	}
}

func (r *jsonReader) page(p *Page) {
	if !r.open('{') {
		return
	}
	var seen uint32
	for first := true; r.more(&first, '}'); {
		switch k := r.key(); string(k) {
		case "conv_id":
			r.seen(&seen, 1<<0)
			r.name(&p.ConvID)
		case "epoch":
			r.seen(&seen, 1<<1)
			r.uint(&p.Epoch)
		case "conv_type":
			r.seen(&seen, 1<<2)
			r.word(&p.ConvType)
		case "max_seq":
			r.seen(&seen, 1<<3)
			r.uint(&p.MaxSeq)
		case "first_seq":
			r.seen(&seen, 1<<4)
			r.uint(&p.FirstSeq)
		case "has_more":
			r.seen(&seen, 1<<5)
			r.bool(&p.HasMore)
		case "incomplete":
			r.seen(&seen, 1<<6)
			r.bool(&p.Incomplete)
		case "messages":
			r.seen(&seen, 1<<7)
			r.messages(&p.Messages)
		default:
			r.unknown(k, "conv_id", "epoch", "conv_type", "max_seq", "first_seq", "has_more", "incomplete", "messages")
		}
	}
	for i := range p.Messages {
		p.Messages[i].fromSlice(p.ConvID, p.Epoch, p.ConvType)
	}
}

// messages reads an array of messages. They are read into a buffer the
// reader keeps and copied once into a slice of their number: appending to
// the answer's own slice would copy them at every growth.
func (r *jsonReader) messages(dst *[]Message) {
	if !r.open('[') {
		if r.err == nil {
			*dst = nil
		}
		return
	}
	buf := r.msgs[:0]
	for first := true; r.more(&first, ']'); {
		buf = append(buf, Message{})
		r.message(&buf[len(buf)-1])
	}
	out := make([]Message, len(buf))
	copy(out, buf)
	clear(buf)
	r.msgs = buf[:0]
	*dst = out
}

// message reads a message in either form. A text body ("text") is the
// body whatever "body" says, and without a content type it is text/plain,
// as wireMessage.message has it.
func (r *jsonReader) message(m *Message) {
	if !r.open('{') {
		return
	}
	var seen uint32
	var text []byte
	hasText := false
	for first := true; r.more(&first, '}'); {
		switch k := r.key(); string(k) {
		case "conv_id":
			r.seen(&seen, 1<<0)
			r.name(&m.ConvID)
		case "seq":
			r.seen(&seen, 1<<1)
			r.uint(&m.Seq)
		case "epoch":
			r.seen(&seen, 1<<2)
			r.uint(&m.Epoch)
		case "write_time_ms":
			r.seen(&seen, 1<<3)
			r.int64(&m.WriteTimeMS)
		case "client_msg_id":
			r.seen(&seen, 1<<4)
			r.str(&m.ClientMsgID)
		case "conv_type":
			r.seen(&seen, 1<<5)
			r.word(&m.ConvType)
		case "kind":
			r.seen(&seen, 1<<6)
			r.word(&m.Kind)
		case "sender":
			r.seen(&seen, 1<<7)
			r.name(&m.Sender)
		case "recipients":
			r.seen(&seen, 1<<8)
			r.strings(&m.Recipients)
		case "mentions":
			r.seen(&seen, 1<<9)
			r.strings(&m.Mentions)
		case "mention_all":
			r.seen(&seen, 1<<10)
			r.bool(&m.MentionAll)
		case "content_type":
			r.seen(&seen, 1<<11)
			r.word(&m.ContentType)
		case "body":
			r.seen(&seen, 1<<12)
			r.base64Bytes(&m.Body)
		case "send_time_ms":
			r.seen(&seen, 1<<13)
			r.int64(&m.SendTimeMS)
		case "text":
			r.seen(&seen, 1<<14)
			if s, ok := r.strBytes(); ok {
				text, hasText = r.keepText(s), true
			}
		default:
			r.unknown(k, "conv_id", "seq", "epoch", "write_time_ms", "client_msg_id", "conv_type", "kind", "sender",
				"recipients", "mentions", "mention_all", "content_type", "body", "send_time_ms", "text")
		}
	}
	if hasText {
		m.Body = text
		if m.ContentType == "" {
			m.ContentType = "text/plain"
		}
	}
}

func (r *jsonReader) convList(l *ConvList) {
	if !r.open('{') {
		return
	}
	var seen uint32
	for first := true; r.more(&first, '}'); {
		switch k := r.key(); string(k) {
		case "conversations":
			r.seen(&seen, 1<<0)
			r.convItems(&l.Conversations)
		case "next":
			r.seen(&seen, 1<<1)
			r.str(&l.Next)
		default:
			r.unknown(k, "conversations", "next")
		}
	}
}

func (r *jsonReader) convItems(dst *[]ConvItem) { readArray(r, dst, (*jsonReader).convItem) }

func (r *jsonReader) convItem(c *ConvItem) {
	if !r.open('{') {
		return
	}
	var seen uint32
	for first := true; r.more(&first, '}'); {
		switch k := r.key(); string(k) {
		case "conv_id":
			r.seen(&seen, 1<<0)
			r.name(&c.ConvID)
		case "kind":
			r.seen(&seen, 1<<1)
			r.word(&c.Kind)
		case "large":
			r.seen(&seen, 1<<2)
			r.bool(&c.Large)
		case "unread":
			r.seen(&seen, 1<<3)
			r.uint(&c.Unread)
		case "last_seq":
			r.seen(&seen, 1<<4)
			r.uint(&c.LastSeq)
		case "read_seq":
			r.seen(&seen, 1<<5)
			r.uint(&c.ReadSeq)
		case "last_active_ms":
			r.seen(&seen, 1<<6)
			r.int64(&c.LastActiveMS)
		case "preview":
			r.seen(&seen, 1<<7)
			r.preview(&c.Preview)
		case "mentions":
			r.seen(&seen, 1<<8)
			r.int(&c.Mentions)
		case "acked_seq":
			r.seen(&seen, 1<<9)
			r.uint(&c.AckedSeq)
		default:
			r.unknown(k, "conv_id", "kind", "large", "unread", "last_seq", "read_seq", "last_active_ms", "preview",
				"mentions", "acked_seq")
		}
	}
}

func (r *jsonReader) preview(dst **Preview) {
	if !r.open('{') {
		if r.err == nil {
			*dst = nil
		}
		return
	}
	p := new(Preview)
	var seen uint32
	for first := true; r.more(&first, '}'); {
		switch k := r.key(); string(k) {
		case "seq":
			r.seen(&seen, 1<<0)
			r.uint(&p.Seq)
		case "sender":
			r.seen(&seen, 1<<1)
			r.name(&p.Sender)
		case "ts":
			r.seen(&seen, 1<<2)
			r.int64(&p.TS)
		case "text":
			r.seen(&seen, 1<<3)
			r.str(&p.Text)
		default:
			r.unknown(k, "seq", "sender", "ts", "text")
		}
	}
	*dst = p
}
