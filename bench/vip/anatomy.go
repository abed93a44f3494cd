package main

import (
	"bytes"
	"context"
	"fmt"

	"google.golang.org/protobuf/proto"

	"github.com/offlinebox/offlinebox/bench/internal/harness"
	"github.com/offlinebox/offlinebox/redisstore"
	"github.com/offlinebox/offlinebox/schemas"
)

// anatomy splits the biggest costs of the data model into their parts, per
// message, so a missed memory target says what to change.
type anatomy struct {
	TimelineMessages int64 `json:"timeline_messages"`
	TimelineControl  int64 `json:"timeline_control_entries"`
	// Per message entry, in bytes: the entry as stored, and its parts.
	EntryAvg  float64 `json:"entry_avg"`
	BodyAvg   float64 `json:"body_avg"`
	PrefixAvg float64 `json:"prefix_avg"`
	// FieldsAvg: protobuf bytes of each Message field other than the body.
	FieldsAvg map[string]float64 `json:"fields_avg"`
	// RedisPerEntry: what the list costs above the entries' own bytes.
	RedisPerEntry float64 `json:"redis_per_entry"`
	// ControlBytes: join records (member lists) kept in timelines.
	ControlBytes      int64   `json:"control_entry_bytes"`
	DedupePerMessage  float64 `json:"dedupe_bytes_per_message"`
	InboxHashAvg      float64 `json:"inbox_hash_bytes_per_user"`
	ConvListAvg       float64 `json:"conv_list_bytes_per_user"`
	MembersPerMember  float64 `json:"members_hash_bytes_per_member"`
	TotalMemberships  int     `json:"memberships"`
	UsersWithInboxKey int     `json:"users_with_inbox"`
}

var fieldClears = map[string]func(m *schemas.Message){
	"client_msg_id": func(m *schemas.Message) { m.ClientMsgId = "" },
	"conv_id":       func(m *schemas.Message) { m.ConvId = "" },
	"sender":        func(m *schemas.Message) { m.Sender = "" },
	"recipients":    func(m *schemas.Message) { m.Recipients = nil },
	"mentions":      func(m *schemas.Message) { m.Mentions = nil },
	"content_type":  func(m *schemas.Message) { m.ContentType = "" },
	"send_time_ms":  func(m *schemas.Message) { m.SendTimeMs = 0 },
	"enums":         func(m *schemas.Message) { m.ConvType, m.Kind, m.Qos, m.MentionAll = 0, 0, 0, false },
}

// measureAnatomy reads every timeline and weighs each part of its entries.
func (r *runner) measureAnatomy(ctx context.Context, c harness.Census) (*anatomy, error) {
	a := &anatomy{FieldsAvg: map[string]float64{}}
	keys := redisstore.Keys{Prefix: r.f.Prefix}
	var entryBytes, bodyBytes, prefixBytes int64
	fields := map[string]int64{}
	for conv := range r.sc.toVIP {
		raw, err := r.st.Redis.LRange(ctx, keys.Timeline(conv), 0, -1).Result()
		if err != nil {
			return nil, fmt.Errorf("read timeline %s: %w", conv, err)
		}
		for _, e := range raw {
			// No conversation id: entries do not store it, and the
			// field sizes below weigh what is stored.
			sq, err := redisstore.DecodeEntry([]byte(e), "", 0)
			if err != nil {
				return nil, err
			}
			m := sq.GetMessage()
			if m.GetKind() != schemas.Kind_KIND_MESSAGE {
				a.TimelineControl++
				a.ControlBytes += int64(len(e))
				continue
			}
			a.TimelineMessages++
			entryBytes += int64(len(e))
			bodyBytes += int64(len(m.GetBody()))
			prefixBytes += int64(entryPrefixLen([]byte(e)))
			full := proto.Size(m)
			for name, clear := range fieldClears {
				cl := proto.Clone(m).(*schemas.Message)
				clear(cl)
				fields[name] += int64(full - proto.Size(cl))
			}
		}
	}
	n := float64(a.TimelineMessages)
	a.EntryAvg, a.BodyAvg, a.PrefixAvg = round1(float64(entryBytes)/n), round1(float64(bodyBytes)/n), round1(float64(prefixBytes)/n)
	for name, v := range fields {
		a.FieldsAvg[name] = round1(float64(v) / n)
	}
	for _, k := range c.Kinds {
		switch k.Kind {
		case "{c}:tl":
			a.RedisPerEntry = round1(float64(k.Bytes-entryBytes-a.ControlBytes) / float64(a.TimelineMessages+a.TimelineControl))
		case "{c}:dd":
			a.DedupePerMessage = round1(float64(k.Bytes) / float64(len(r.sc.msgs)))
		case "{u}:ib":
			a.InboxHashAvg, a.UsersWithInboxKey = round1(float64(k.Bytes)/float64(k.Keys)), k.Keys
		case "{u}:cl":
			a.ConvListAvg = round1(float64(k.Bytes) / float64(k.Keys))
		case "{c}:mem":
			for _, size := range r.sc.groupSize {
				a.TotalMemberships += size
			}
			a.MembersPerMember = round1(float64(k.Bytes) / float64(a.TotalMemberships+2*directConvs))
		}
	}
	return a, nil
}

// entryPrefixLen is the length of "SEQ:WRITE_MS:" at the start of an entry.
func entryPrefixLen(e []byte) int {
	i := bytes.IndexByte(e, ':')
	return i + 1 + bytes.IndexByte(e[i+1:], ':') + 1
}

func round1(v float64) float64 { return harness.Round(v, 1) }
