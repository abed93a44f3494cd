package api

import (
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/offlinebox/offlinebox/auth"
	"github.com/offlinebox/offlinebox/edge"
	"github.com/offlinebox/offlinebox/wire"
)

// ackRequest is the body of POST /v1/ack: what one device stored.
type ackRequest struct {
	DeviceID string            `json:"device_id"`
	Acks     []json.RawMessage `json:"acks"`
}

// seqItemJSON is one item of an ack or read batch.
type seqItemJSON = wire.AckItem

type ackResponse = wire.AckResponse

// seqItem is a (conversation, seq, epoch) of a batch request, checked
// against the conversation before anything is written.
type seqItem = edge.SeqItem

// parseSeqItems decodes a batch of (conv_id, seq[, epoch]) objects.
func (s *Server) parseSeqItems(raws []json.RawMessage, field string) ([]seqItem, error) {
	if len(raws) > s.cfg.MaxCursors { // refused before anything is decoded
		return nil, badRequest(field, "holds %d items, more than %d", len(raws), s.cfg.MaxCursors)
	}
	decoded := make([]seqItemJSON, len(raws))
	for i, raw := range raws {
		if err := decodeJSON(raw, &decoded[i], fmt.Sprintf("%s[%d]", field, i)); err != nil {
			return nil, err
		}
	}
	return s.checkedSeqItems(decoded, field)
}

// checkedSeqItems checks decoded (conv_id, seq[, epoch]) objects, at most
// Config.MaxCursors of them.
func (s *Server) checkedSeqItems(decoded []seqItemJSON, field string) ([]seqItem, error) {
	return edge.CheckedSeqItems(decoded, field, s.cfg.MaxCursors)
}

// ack answers POST /v1/ack: it raises this device's cursors only.
func (s *Server) ack(r *http.Request, id auth.Identity) (int, any, error) {
	data, aerr := readBody(r)
	if aerr != nil {
		return 0, nil, aerr
	}
	named, decoded, fast := edge.ParseAckBody(data)
	var body ackRequest
	if !fast {
		if err := decodeJSON(data, &body, ""); err != nil {
			return 0, nil, err
		}
		named = body.DeviceID
	}
	dev, err := deviceOf(id, named, "device_id", true)
	if err != nil {
		return 0, nil, err
	}
	var items []seqItem
	if fast {
		items, err = s.checkedSeqItems(decoded, "acks")
	} else {
		items, err = s.parseSeqItems(body.Acks, "acks")
	}
	if err != nil {
		return 0, nil, err
	}
	out, err := s.acker.Apply(r.Context(), id.User, dev, items, nil)
	if err != nil {
		return 0, nil, err
	}
	return http.StatusOK, out, nil
}
