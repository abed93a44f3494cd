package redisstore

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/redis/go-redis/v9"
)

// InboxEntry is one conversation of a user's inbox index.
type InboxEntry struct {
	Last, Read, Joined uint64
	// Epoch is the conversation epoch Last, Read and Joined count in (0:
	// written before inboxes kept it).
	Epoch uint64
	// Form is the `C:t` field (0 when absent); InboxLarge: the user is in
	// the large group, its unread is derived from the group's seq.
	Form InboxForm
}

// UserInbox is a user's inbox index as the checker reads it.
type UserInbox struct {
	// Moved: these keys are the stale main-store copy of a user moved to
	// the hot store; the hot store holds the live ones.
	Moved bool
	Convs map[string]InboxEntry
	// Malformed lists fields that do not parse.
	Malformed []string
	// Lane is the mention lane, read with the inbox.
	Lane []string
}

// ReadInbox reads a user's inbox index.
func (s *Store) ReadInbox(ctx context.Context, user string) (UserInbox, error) {
	ctx, cancel := context.WithTimeout(ctx, s.cfg.CallTimeout)
	defer cancel()
	var ib *redis.MapStringStringCmd
	var mn *redis.StringSliceCmd
	var loc *redis.StringCmd
	_, err := s.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		ib = p.HGetAll(ctx, s.keys.Inbox(user))
		mn = p.ZRange(ctx, s.keys.Mentions(user), 0, -1)
		loc = p.HGet(ctx, s.keys.Profile(user), ProfileLocation)
		return nil
	})
	if err != nil && err != redis.Nil {
		return UserInbox{}, fmt.Errorf("read inbox of %s: %w", user, err)
	}
	out := UserInbox{Moved: loc.Val() == ProfileOnHot, Convs: map[string]InboxEntry{}, Lane: mn.Val()}
	for f, v := range ib.Val() {
		if strings.HasPrefix(f, ":") {
			continue // the list indexes' fields (InboxLargeGroups, InboxIndexed)
		}
		i := strings.LastIndexByte(f, ':')
		if i < 1 || i != len(f)-2 {
			out.Malformed = append(out.Malformed, f)
			continue
		}
		conv, field := f[:i], f[i+1]
		e := out.Convs[conv]
		if field == FieldType {
			if len(v) == 1 {
				e.Form = InboxForm(v[0])
			}
			out.Convs[conv] = e
			continue
		}
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			out.Malformed = append(out.Malformed, f)
			continue
		}
		switch field {
		case FieldLast:
			e.Last = n
		case FieldRead:
			e.Read = n
		case FieldJoined:
			e.Joined = n
		case FieldEpoch:
			e.Epoch = n
		}
		out.Convs[conv] = e
	}
	return out, nil
}

// ReadMentionLane reads a user's mention references ("CONV:SEQ").
func (s *Store) ReadMentionLane(ctx context.Context, user string) (moved bool, refs []string, err error) {
	ctx, cancel := context.WithTimeout(ctx, s.cfg.CallTimeout)
	defer cancel()
	var mn *redis.StringSliceCmd
	var loc *redis.StringCmd
	_, err = s.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		mn = p.ZRange(ctx, s.keys.Mentions(user), 0, -1)
		loc = p.HGet(ctx, s.keys.Profile(user), ProfileLocation)
		return nil
	})
	if err != nil && err != redis.Nil {
		return false, nil, fmt.Errorf("read mention lane of %s: %w", user, err)
	}
	return loc.Val() == ProfileOnHot, mn.Val(), nil
}

// DeviceState is one device's cursor as the checker reads it.
type DeviceState struct {
	Moved bool
	// Registered: the device is in the user's device set.
	Registered bool
	// Devices is the size of the user's device set.
	Devices int64
	Cursors map[string]Position
}

// ReadDevice reads one device's cursor with the user's device set.
func (s *Store) ReadDevice(ctx context.Context, user, device string) (DeviceState, error) {
	ctx, cancel := context.WithTimeout(ctx, s.cfg.CallTimeout)
	defer cancel()
	var cur *redis.MapStringStringCmd
	var score *redis.FloatCmd
	var n *redis.IntCmd
	var loc *redis.StringCmd
	_, err := s.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		cur = p.HGetAll(ctx, s.keys.Cursor(user, device))
		score = p.ZScore(ctx, s.keys.Devices(user), device)
		n = p.ZCard(ctx, s.keys.Devices(user))
		loc = p.HGet(ctx, s.keys.Profile(user), ProfileLocation)
		return nil
	})
	if err != nil && err != redis.Nil {
		return DeviceState{}, fmt.Errorf("read device %s of %s: %w", device, user, err)
	}
	return DeviceState{Moved: loc.Val() == ProfileOnHot, Registered: score.Err() == nil, Devices: n.Val(),
		Cursors: ParseCursors(cur.Val())}, nil
}

// ReadDeviceSet reads a user's registered devices.
func (s *Store) ReadDeviceSet(ctx context.Context, user string) (moved bool, devices []string, err error) {
	ctx, cancel := context.WithTimeout(ctx, s.cfg.CallTimeout)
	defer cancel()
	var dv *redis.StringSliceCmd
	var loc *redis.StringCmd
	_, err = s.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		dv = p.ZRange(ctx, s.keys.Devices(user), 0, -1)
		loc = p.HGet(ctx, s.keys.Profile(user), ProfileLocation)
		return nil
	})
	if err != nil && err != redis.Nil {
		return false, nil, fmt.Errorf("read devices of %s: %w", user, err)
	}
	return loc.Val() == ProfileOnHot, dv.Val(), nil
}

// ListIndexState is a user's list indexes beside what they index, read in
// one snapshot (schemas/redis-keys.md, "List indexes").
type ListIndexState struct {
	Moved bool
	// Built: the indexes are complete (InboxIndexed); before, they are
	// not compared.
	Built bool
	// Large is the InboxLargeGroups list; InboxLarge the conversations
	// whose inbox form is InboxLarge.
	Large, InboxLarge []string
	// Index is the mention index; Lane the mention lane.
	Index, Lane []string
}

// ReadListIndex reads a user's list indexes and what they index.
func (s *Store) ReadListIndex(ctx context.Context, user string) (ListIndexState, error) {
	ctx, cancel := context.WithTimeout(ctx, s.cfg.CallTimeout)
	defer cancel()
	k := s.keys
	var ib *redis.MapStringStringCmd
	var mx, mn *redis.StringSliceCmd
	var loc *redis.StringCmd
	_, err := s.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		ib = p.HGetAll(ctx, k.Inbox(user))
		mx = p.ZRange(ctx, k.MentionIndex(user), 0, -1)
		mn = p.ZRange(ctx, k.Mentions(user), 0, -1)
		loc = p.HGet(ctx, k.Profile(user), ProfileLocation)
		return nil
	})
	if err != nil && err != redis.Nil {
		return ListIndexState{}, fmt.Errorf("read list index of %s: %w", user, err)
	}
	h := ib.Val()
	out := ListIndexState{Moved: loc.Val() == ProfileOnHot, Built: h[InboxIndexed] == "1",
		Large: strings.Fields(h[InboxLargeGroups]), Index: mx.Val(), Lane: mn.Val()}
	for f, v := range h {
		if conv, ok := strings.CutSuffix(f, ":"+string(rune(FieldType))); ok && v == string(InboxLarge) {
			out.InboxLarge = append(out.InboxLarge, conv)
		}
	}
	return out, nil
}
