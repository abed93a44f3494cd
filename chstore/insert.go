package chstore

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/offlinebox/offlinebox/schemas"
)

// messageColumns is the explicit column list of every INSERT into the
// history table, in the order rowOf appends them.
const messageColumns = "conv_id, seq, epoch, conv_type, kind, sender, recipients, mentions, " +
	"mention_all, qos, content_type, client_msg_id, body, send_time, send_time_ms, write_time, write_time_ms, sealed_epoch, role, authority"

// maxDateTimeSec is the last second a ClickHouse DateTime (UInt32) holds.
const maxDateTimeSec = math.MaxUint32

// CheckInsertable reports why the history table cannot hold a record, as
// an error wrapping ErrInvalid, or nil. No retry can fix such a record: the
// caller dead-letters it instead of blocking the others behind it.
func CheckInsertable(m *schemas.Sequenced) error {
	msg := m.GetMessage()
	switch {
	case msg == nil:
		return invalidf("sequenced record has no message")
	case m.GetSeq() == 0:
		return invalidf("sequenced record has seq 0")
	case m.GetWriteTimeMs() <= 0 || m.GetWriteTimeMs()/1000 > maxDateTimeSec:
		return invalidf("write_time_ms %d is outside the DateTime range", m.GetWriteTimeMs())
	}
	if err := schemas.ValidID("conv_id", msg.GetConvId()); err != nil {
		return fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	if schemas.ConvTypeName(msg.GetConvType()) == "" {
		return invalidf("conv_type %d has no value in the history table", msg.GetConvType())
	}
	if schemas.KindName(msg.GetKind()) == "" {
		return invalidf("kind %d has no value in the history table", msg.GetKind())
	}
	if schemas.QoSName(msg.GetQos()) == "" {
		return invalidf("qos %d has no value in the history table", msg.GetQos())
	}
	if schemas.RoleName(msg.GetRole()) == "" {
		return invalidf("role %d has no value in the history table", msg.GetRole())
	}
	if schemas.AuthorityName(msg.GetAuthority()) == "" {
		return invalidf("authority %d has no value in the history table", msg.GetAuthority())
	}
	return nil
}

// InsertBatch appends records to the history table in one INSERT. Records
// already there (a replay) are inserted again and collapse with their first
// copy; readers of this package never see both. If any record fails
// CheckInsertable nothing is inserted. The tags records carry go to the
// conversation_tags table after the rows.
func (s *Store) InsertBatch(ctx context.Context, msgs []*schemas.Sequenced) error {
	if len(msgs) == 0 {
		return nil
	}
	for i, m := range msgs {
		if err := CheckInsertable(m); err != nil {
			return fmt.Errorf("insert messages: record %d: %w", i, err)
		}
	}
	ctx, cancel := context.WithTimeout(ctx, s.cfg.InsertTimeout)
	defer cancel()
	batch, err := s.conn.PrepareBatch(ctx, "INSERT INTO "+historyTable+" ("+messageColumns+")")
	if err != nil {
		return fmt.Errorf("insert %d messages: prepare: %w", len(msgs), err)
	}
	defer batch.Abort()
	for i, m := range msgs {
		if err := batch.Append(rowOf(m)...); err != nil {
			return fmt.Errorf("insert %d messages: append record %d (%s seq %d): %w",
				len(msgs), i, m.GetMessage().GetConvId(), m.GetSeq(), err)
		}
	}
	if err := batch.Send(); err != nil {
		return fmt.Errorf("insert %d messages: %w", len(msgs), err)
	}
	if err := s.insertTags(ctx, msgs); err != nil {
		return err
	}
	return s.insertDataKeys(ctx, msgs)
}

// rowOf lays a record out in messageColumns order.
func rowOf(m *schemas.Sequenced) []any {
	msg := m.GetMessage()
	mentionAll := uint8(0)
	if msg.GetMentionAll() {
		mentionAll = 1
	}
	return []any{
		msg.GetConvId(), m.GetSeq(), m.GetEpoch(),
		schemas.ConvTypeName(msg.GetConvType()), schemas.KindName(msg.GetKind()),
		msg.GetSender(), nonNil(msg.GetRecipients()), nonNil(msg.GetMentions()), mentionAll,
		schemas.QoSName(msg.GetQos()), msg.GetContentType(), msg.GetClientMsgId(), msg.GetBody(),
		dateTimeOf(msg.GetSendTimeMs()), msg.GetSendTimeMs(),
		dateTimeOf(m.GetWriteTimeMs()), m.GetWriteTimeMs(), msg.GetSealedEpoch(),
		schemas.RoleName(msg.GetRole()), schemas.AuthorityName(msg.GetAuthority()),
	}
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// dateTimeOf clamps milliseconds into the DateTime range: send time is the
// producer's clock and may be anything; the exact value stays in *_ms.
func dateTimeOf(ms int64) time.Time {
	sec := ms / 1000
	switch {
	case sec < 0:
		sec = 0
	case sec > maxDateTimeSec:
		sec = maxDateTimeSec
	}
	return time.Unix(sec, 0).UTC()
}

func invalidf(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrInvalid, fmt.Sprintf(format, args...))
}
