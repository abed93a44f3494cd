package api

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/offlinebox/offlinebox/schemas"
)

// BodyOpener opens sealed bodies and previews (seal.Sealer is one). The
// API opens only what it already decided the caller may read: every read
// path checks membership before it encodes a message.
type BodyOpener interface {
	OpenBody(ctx context.Context, conv string, epoch, seq uint64, m *schemas.Message) (*schemas.Message, error)
	OpenPreview(ctx context.Context, conv, text string) (string, error)
}

// openMessage returns sq with its body opened (sq itself when it is not
// sealed).
func (s *Server) openMessage(ctx context.Context, sq *schemas.Sequenced) (*schemas.Sequenced, error) {
	m := sq.GetMessage()
	if m.GetSealedEpoch() == 0 {
		return sq, nil
	}
	if s.opener == nil {
		return nil, fmt.Errorf("open %s/%d: the body is sealed and no key ring is configured", m.GetConvId(), sq.GetSeq())
	}
	open, err := s.opener.OpenBody(ctx, m.GetConvId(), sq.GetEpoch(), sq.GetSeq(), m)
	if err != nil {
		return nil, err
	}
	return &schemas.Sequenced{Message: open, Seq: sq.GetSeq(), Epoch: sq.GetEpoch(), WriteTimeMs: sq.GetWriteTimeMs()}, nil
}

// openPreview opens a sealed preview text.
func (s *Server) openPreview(ctx context.Context, conv, text string) (string, error) {
	if s.opener == nil {
		return text, nil
	}
	return s.opener.OpenPreview(ctx, conv, text)
}

// encodeMessages opens and renders messages as JSON, in order.
func (s *Server) encodeMessages(ctx context.Context, ms []*schemas.Sequenced, form messageForm) ([]json.RawMessage, error) {
	out := make([]json.RawMessage, len(ms))
	for i, m := range ms {
		open, err := s.openMessage(ctx, m)
		if err != nil {
			return nil, err
		}
		out[i] = appendMessageJSON(nil, open, form)
	}
	return out, nil
}
