package client

import "encoding/json"

// The answers that carry many messages are decoded through mirrors of
// their types that hold a message's two body forms as plain fields:
// json.Unmarshal scans a value that has its own UnmarshalJSON once more to
// find its end and then again to check it, so decoding a sync answer
// through Message.UnmarshalJSON read every message three times. Through
// these it is read once.
//
// The client itself decodes these answers with the reader of
// wire_decode.go; encoding/json through the mirrors (decodeReflect) is
// what that reader must agree with, and what decodes the few shapes the
// reader leaves to it.

// plainMessage is Message without its UnmarshalJSON.
type plainMessage Message

// wireMessage is a message as the API sends it: a text body is a string.
type wireMessage struct {
	plainMessage
	Text *string `json:"text"`
}

func (w *wireMessage) message() Message {
	m := Message(w.plainMessage)
	if w.Text != nil {
		m.Body = []byte(*w.Text)
		if m.ContentType == "" {
			m.ContentType = "text/plain" // what text without a content type means
		}
	}
	return m
}

func messagesOf(ws []wireMessage) []Message {
	if ws == nil {
		return nil
	}
	out := make([]Message, len(ws))
	for i := range ws {
		out[i] = ws[i].message()
	}
	return out
}

type plainSyncConv SyncConv

type wireSyncConv struct {
	plainSyncConv
	Messages []wireMessage `json:"messages"`
}

type wireSyncMention struct {
	ConvID  string      `json:"conv_id"`
	All     bool        `json:"all"`
	Message wireMessage `json:"message"`
}

type plainSyncResponse SyncResponse

type wireSyncResponse struct {
	plainSyncResponse
	Mentions      []wireSyncMention `json:"mentions"`
	Conversations []wireSyncConv    `json:"conversations"`
}

// wireDecoder is the decode of an answer read with the reader of
// wire_decode.go, its slices' messages given what the slice says once;
// false for an answer left to encoding/json.
func wireDecoder(out any) (func(data []byte) error, bool) {
	switch v := out.(type) {
	case *SyncResponse:
		return v.decodeWire, true
	case *Page:
		return v.decodeWire, true
	case *ConvList:
		return func(data []byte) error { return decodeConvList(v, data) }, true
	}
	return nil, false
}

// decodeReflect is the sync answer decoded by encoding/json through its
// mirror: what the reader of jsonread.go must give, and what decodes the
// shapes it leaves to encoding/json.
func (r *SyncResponse) decodeReflect(data []byte) error {
	var w wireSyncResponse
	if err := json.Unmarshal(data, &w); err != nil {
		return err
	}
	*r = SyncResponse(w.plainSyncResponse)
	if w.Mentions != nil {
		r.Mentions = make([]SyncMention, len(w.Mentions))
		for i, m := range w.Mentions {
			r.Mentions[i] = SyncMention{ConvID: m.ConvID, All: m.All, Message: m.Message.message()}
		}
	}
	if w.Conversations != nil {
		r.Conversations = make([]SyncConv, len(w.Conversations))
		for i := range w.Conversations {
			wc := &w.Conversations[i]
			sc := SyncConv(wc.plainSyncConv)
			sc.Messages = messagesOf(wc.Messages)
			for j := range sc.Messages {
				sc.Messages[j].fromSlice(sc.ConvID, sc.Epoch, sc.Kind)
			}
			r.Conversations[i] = sc
		}
	}
	return nil
}

type plainPage Page

type wirePage struct {
	plainPage
	Messages []wireMessage `json:"messages"`
}

// decodeReflect is the page decoded by encoding/json (see SyncResponse's).
func (p *Page) decodeReflect(data []byte) error {
	var w wirePage
	if err := json.Unmarshal(data, &w); err != nil {
		return err
	}
	*p = Page(w.plainPage)
	p.Messages = messagesOf(w.Messages)
	for i := range p.Messages {
		p.Messages[i].fromSlice(p.ConvID, p.Epoch, p.ConvType)
	}
	return nil
}

// UnmarshalJSON decodes a sync answer wherever it is read; the client's
// own requests call decodeWire directly, which spares the scans
// encoding/json makes before it calls an UnmarshalJSON.
func (r *SyncResponse) UnmarshalJSON(data []byte) error { return r.decodeWire(data) }

// UnmarshalJSON decodes a page wherever it is read (see SyncResponse's).
func (p *Page) UnmarshalJSON(data []byte) error { return p.decodeWire(data) }
