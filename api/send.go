package api

import (
	"fmt"
	"github.com/offlinebox/offlinebox/wire"
	"net/http"
	"strings"

	"github.com/twmb/franz-go/pkg/kgo"
	"google.golang.org/protobuf/proto"

	"github.com/offlinebox/offlinebox/auth"
	"github.com/offlinebox/offlinebox/redisstore"
	"github.com/offlinebox/offlinebox/schemas"
)

// sendRequest is the body of POST /v1/messages. The sender is the
// authenticated user.
type sendRequest = wire.SendRequest

// sendMessage answers POST /v1/messages: the message is validated, checked
// against the conversation (the sender must be a member of an existing
// one; a conversation that does not exist yet is new) and produced to
// im.messages keyed by conversation. 202: the pipeline sequences it; a
// resend with the same client_msg_id gets the same seq.
//
// A conversation created by an earlier request may not be sequenced yet
// when the next one comes; it still counts as new then, and the records
// keep their order because they share the conversation's partition.
func (s *Server) sendMessage(r *http.Request, id auth.Identity) (int, any, error) {
	var body sendRequest
	if err := readJSON(r, &body); err != nil {
		return 0, nil, err
	}
	m, err := s.messageOf(body, id.User)
	if err != nil {
		return 0, nil, err
	}
	access, err := s.router.Main().ConversationAccess(r.Context(), id.User, []string{m.ConvId})
	if err != nil {
		return 0, nil, err
	}
	if err := mayPost(m, access[m.ConvId]); err != nil {
		return 0, nil, err
	}
	v, err := proto.Marshal(m)
	if err != nil {
		return 0, nil, fmt.Errorf("encode message: %w", err)
	}
	rec := &kgo.Record{Topic: s.cfg.MessagesTopic, Key: []byte(m.ConvId), Value: v}
	if err := s.produce(r, []*kgo.Record{rec}); err != nil {
		return 0, nil, err
	}
	return http.StatusAccepted, wire.SendAnswer{ClientMsgID: m.ClientMsgId, ConvID: m.ConvId}, nil
}

// messageOf builds and validates the Message of a send request.
func (s *Server) messageOf(b sendRequest, sender string) (*schemas.Message, error) {
	m := &schemas.Message{
		ClientMsgId: b.ClientMsgID, ConvId: b.ConvID, Sender: sender, Recipients: b.Recipients,
		Mentions: b.Mentions, MentionAll: b.MentionAll, ContentType: b.ContentType, Body: b.Body, SendTimeMs: b.SendTimeMS,
	}
	if b.Text != nil {
		if b.Body != nil {
			return nil, badRequest("text", "give body (base64) or text, not both")
		}
		if m.ContentType == "" {
			m.ContentType = textPlain
		}
		if ct := m.ContentType; len(ct) < 5 || !strings.EqualFold(ct[:5], "text/") {
			return nil, badRequest("text", "content_type %q is not a text/ type; send it as body (base64)", ct)
		}
		m.Body = []byte(*b.Text)
	}
	var ok bool
	if m.ConvType, ok = schemas.ParseConvType(b.ConvType); !ok || m.ConvType == schemas.ConvType_CONV_TYPE_UNSPECIFIED {
		return nil, badRequest("conv_type", "%q is not one of direct, group", b.ConvType)
	}
	if m.Kind, ok = schemas.ParseKind(b.Kind); (!ok || m.Kind == schemas.Kind_KIND_UNSPECIFIED) && b.Kind != "" {
		return nil, badRequest("kind", "%q is not one of message, member_join, member_leave", b.Kind)
	}
	if b.Kind == "" {
		m.Kind = schemas.Kind_KIND_MESSAGE
	}
	if m.Role, ok = schemas.ParseRole(b.Role); (!ok || m.Role == schemas.Role_ROLE_UNSPECIFIED) && b.Role != "" {
		return nil, badRequest("role", "%q is not one of member, admin, owner", b.Role)
	}
	if m.Qos, ok = schemas.ParseQoS(b.QoS); (!ok || m.Qos == schemas.QoS_QOS_UNSPECIFIED) && b.QoS != "" {
		return nil, badRequest("qos", "%q is not one of at_most_once, at_least_once", b.QoS)
	}
	switch {
	case m.SendTimeMs < 0:
		return nil, badRequest("send_time_ms", "%d is negative", m.SendTimeMs)
	case m.SendTimeMs == 0:
		m.SendTimeMs = s.cfg.Clock().UnixMilli()
	}
	if err := schemas.ValidateMessage(m, s.cfg.Limits); err != nil {
		return nil, invalidField("", err)
	}
	if m.ConvType == schemas.ConvType_CONV_TYPE_DIRECT && m.Recipients[0] == sender {
		return nil, badRequest("recipients", "a direct message goes to someone else")
	}
	return m, nil
}

// mayPost checks a message against its conversation as it stands. It is a
// courtesy: the sequencing script enforces the group's roles, since two
// requests may race past this check (a refused record is dead-lettered).
func mayPost(m *schemas.Message, a redisstore.ConvAccess) error {
	if !a.Exists {
		return nil
	}
	if a.Type != schemas.ConvType_CONV_TYPE_UNSPECIFIED && a.Type != m.ConvType {
		return badRequest("conv_type", "does not match the conversation")
	}
	if !a.Member {
		return forbidden("not a member of this conversation")
	}
	return nil
}
