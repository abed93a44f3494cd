package api

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/twmb/franz-go/pkg/kgo"
	"google.golang.org/protobuf/proto"

	"github.com/offlinebox/offlinebox/auth"
	"github.com/offlinebox/offlinebox/schemas"
)

// readRequest is the body of POST /v1/read.
type readRequest struct {
	DeviceID string            `json:"device_id"`
	Receipts []json.RawMessage `json:"receipts"`
}

type readResponse struct {
	Accepted int `json:"accepted"`
}

// read answers POST /v1/read: the receipts go to im.receipts (keyed by the
// user, so one user's receipts stay in order); the convindex worker
// applies them, and every device of the user then sees the new unread.
func (s *Server) read(r *http.Request, id auth.Identity) (int, any, error) {
	var body readRequest
	if err := readJSON(r, &body); err != nil {
		return 0, nil, err
	}
	dev, err := deviceOf(id, body.DeviceID, "device_id", false)
	if err != nil {
		return 0, nil, err
	}
	items, err := s.parseSeqItems(body.Receipts, "receipts")
	if err != nil {
		return 0, nil, err
	}
	access, err := s.acker.Check(r.Context(), id.User, items)
	if err != nil {
		return 0, nil, err
	}
	now := s.cfg.Clock().UnixMilli()
	recs := make([]*kgo.Record, len(items))
	for i, it := range items {
		v, err := proto.Marshal(&schemas.Receipt{UserId: id.User, DeviceId: dev, ConvId: it.Conv, Seq: it.Seq,
			Kind: schemas.ReceiptKind_RECEIPT_KIND_READ, TimeMs: now})
		if err != nil {
			return 0, nil, fmt.Errorf("encode receipt: %w", err)
		}
		recs[i] = &kgo.Record{Topic: s.cfg.ReceiptsTopic, Key: []byte(id.User), Value: v}
	}
	if err := s.produce(r, recs); err != nil {
		return 0, nil, err
	}
	if err := s.afterReads(r.Context(), id.User, items, access); err != nil {
		return 0, nil, err
	}
	return http.StatusAccepted, readResponse{Accepted: len(recs)}, nil
}

// produce sends records and waits for the broker; a broker that does not
// take them in time is a 503 (the client retries; receipts and messages
// with the same ids are idempotent downstream).
func (s *Server) produce(r *http.Request, recs []*kgo.Record) error {
	ctx, cancel := context.WithTimeout(r.Context(), s.cfg.ProduceTimeout)
	defer cancel()
	if err := s.producer.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		s.log.Warn("produce failed", "topic", recs[0].Topic, "records", len(recs), "err", err)
		return &apiError{Status: http.StatusServiceUnavailable, Code: "unavailable", Msg: "the broker did not take the records; retry"}
	}
	return nil
}
