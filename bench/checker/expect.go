package checker

import (
	"context"
	"fmt"

	"github.com/twmb/franz-go/pkg/kgo"
	"google.golang.org/protobuf/proto"

	"github.com/offlinebox/offlinebox/schemas"
	"github.com/offlinebox/offlinebox/stream"
)

// Truth is what the fanout must have made of the records in im.messages:
// each conversation's seqs in partition order, a resend taking the seq of
// its first copy, and who is entitled to which seqs.
type Truth struct {
	Convs map[string]*ConvTruth
	// Records in the log; Stored are the distinct records that get a seq;
	// Resends are later copies of a client_msg_id; AtMostOnce are QoS 0
	// records; Invalid are records the fanout must dead-letter as
	// undecodable; Refused are those the group's authority refuses (also
	// dead-lettered).
	Records, Stored, Resends, AtMostOnce, Invalid, Refused int
}

// ConvTruth is one conversation as the log defines it.
type ConvTruth struct {
	// IDs[s-1] is the client_msg_id of seq s.
	IDs []string
	// Seq of each client_msg_id.
	Seq map[string]uint64
	// Members: user → the seq after which they receive (0 for founders
	// and direct participants); Left: user → every span they were a
	// member for and left, oldest first (a user may leave, be added back
	// and leave again).
	Members map[string]uint64
	Left    map[string][]Span
	// Roles of a group: its owner ("o") and admins ("a").
	Roles map[string]string
	// Refused: client_msg_id → why the authority refused it.
	Refused map[string]string
}

// Span is a range of seqs (From, To): exclusive on both ends.
type Span struct{ From, To uint64 }

// ReadTruth reads im.messages from the start to its current end and
// derives the truth. maxBody is the fanout's body limit (0: the default).
func ReadTruth(ctx context.Context, brokers []string, maxBody int) (*Truth, error) {
	t := &Truth{Convs: map[string]*ConvTruth{}}
	err := ScanTopic(ctx, brokers, schemas.TopicMessages, func(r *kgo.Record, partitions int32) {
		if !misplaced(r, partitions) {
			t.add(r.Value, maxBody)
		}
	})
	if err != nil {
		return nil, fmt.Errorf("truth: %w", err)
	}
	return t, nil
}

// add applies one record of the log, in partition order.
func (t *Truth) add(value []byte, maxBody int) {
	t.Records++
	m, err := schemas.DecodeMessage(value, schemas.Limits{BodyBytes: maxBody})
	if err != nil {
		t.Invalid++
		return
	}
	if !m.Stored() {
		t.AtMostOnce++
		return
	}
	c := t.Convs[m.GetConvId()]
	if c == nil {
		c = &ConvTruth{Seq: map[string]uint64{}, Members: map[string]uint64{}, Left: map[string][]Span{},
			Roles: map[string]string{}, Refused: map[string]string{}}
		t.Convs[m.GetConvId()] = c
	}
	if _, dup := c.Seq[m.GetClientMsgId()]; dup {
		t.Resends++
		return
	}
	if why := c.refuse(m); why != "" {
		t.Refused++
		c.Refused[m.GetClientMsgId()] = why
		return
	}
	t.Stored++
	c.IDs = append(c.IDs, m.GetClientMsgId())
	s := uint64(len(c.IDs))
	c.Seq[m.GetClientMsgId()] = s
	c.member(m, s)
}

// member applies the membership effect of the record of seq s, as the
// sequencing script does.
func (c *ConvTruth) member(m *schemas.Message, s uint64) {
	switch {
	case m.GetKind() == schemas.Kind_KIND_MESSAGE && m.GetConvType() == schemas.ConvType_CONV_TYPE_DIRECT && len(c.Members) == 0:
		c.Members[m.GetSender()] = 0
		c.Members[m.GetRecipients()[0]] = 0
	case m.GetKind() == schemas.Kind_KIND_MEMBER_JOIN:
		at := s
		if s == 1 {
			at = 0
		}
		for _, u := range m.GetRecipients() {
			if _, ok := c.Members[u]; !ok {
				c.Members[u] = at
			}
		}
	case m.GetKind() == schemas.Kind_KIND_MEMBER_LEAVE:
		for _, u := range m.GetRecipients() {
			if j, ok := c.Members[u]; ok {
				c.Left[u] = append(c.Left[u], Span{From: j, To: s})
				delete(c.Members, u)
			}
		}
	}
}

// Entitlement says what one user must hold of one conversation: every seq
// in Required (exclusive) while a member; a user who left may hold what
// lies in Optional but is not owed it (a non-member cannot sync it).
type Entitlement struct {
	Required *Span
	Optional []Span
}

// For lists the conversations user is or was in and what they are owed.
func (t *Truth) For(user string) map[string]Entitlement {
	out := map[string]Entitlement{}
	for id, c := range t.Convs {
		var e Entitlement
		if j, ok := c.Members[user]; ok {
			e.Required = &Span{From: j, To: uint64(len(c.IDs)) + 1}
		}
		e.Optional = c.Left[user]
		if e.Required != nil || e.Optional != nil {
			out[id] = e
		}
	}
	return out
}

// misplaced reports whether r is a stored record read from a partition,
// of n, its conversation does not hash to: fanout forwards it and
// sequences the forward, which the truth reads where it landed.
func misplaced(r *kgo.Record, n int32) bool {
	var m schemas.Message
	if proto.Unmarshal(r.Value, &m) != nil || !m.Stored() || m.GetConvId() == "" {
		return false
	}
	return stream.KeyPartition([]byte(m.GetConvId()), n) != r.Partition
}
