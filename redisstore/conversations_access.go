package redisstore

import (
	"context"
	"fmt"
	"strconv"

	"github.com/redis/go-redis/v9"
)

// ConvAccess is what the read path needs to know about one conversation to
// check a user's request against it.
type ConvAccess struct {
	Conv string
	// Exists: the conversation has been created (its meta exists).
	Exists bool
	// Member: the user is a member (direct conversations list both
	// participants as members).
	Member bool
	// Joined is the seq of the record that made the user a member.
	Joined uint64
	// Type is 'd' (direct) or 'g' (group) as recorded in meta; 0 if absent.
	Type  byte
	Large bool
	Seq   uint64
	Epoch uint64
	First uint64
}

// ConversationAccess reads, for each conversation, its counters and whether
// user is a member. One pipeline; each conversation's reads stay in its
// slot.
func (s *Store) ConversationAccess(ctx context.Context, user string, convs []string) (map[string]ConvAccess, error) {
	ctx, cancel := context.WithTimeout(ctx, s.cfg.CallTimeout)
	defer cancel()
	metas := make([]*redis.SliceCmd, len(convs))
	mems := make([]*redis.StringCmd, len(convs))
	_, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, c := range convs {
			metas[i] = p.HMGet(ctx, s.keys.ConvMeta(c), "seq", "epoch", "first", "type", "large")
			mems[i] = p.HGet(ctx, s.keys.Members(c), user)
		}
		return nil
	})
	if err != nil && err != redis.Nil {
		return nil, fmt.Errorf("read access of %s to %d conversations: %w", user, len(convs), err)
	}
	out := make(map[string]ConvAccess, len(convs))
	for i, c := range convs {
		a := convAccessOf(c, metas[i].Val())
		if j, err := mems[i].Result(); err == nil {
			a.Member = true
			a.Joined, _ = strconv.ParseUint(j, 10, 64)
		} else if err != redis.Nil {
			return nil, fmt.Errorf("read membership of %s in %s: %w", user, c, err)
		}
		out[c] = a
	}
	return out, nil
}

// convAccessOf reads an HMGET of seq, epoch, first, type, large.
func convAccessOf(conv string, v []any) ConvAccess {
	a := ConvAccess{Conv: conv}
	if len(v) < 5 {
		return a
	}
	for _, x := range v {
		if x != nil {
			a.Exists = true
		}
	}
	a.Seq = readReplyUint(v[0])
	a.Epoch = readReplyUint(v[1])
	a.First = readReplyUint(v[2])
	if a.First == 0 {
		a.First = a.Seq + 1
	}
	if t, _ := v[3].(string); len(t) > 0 {
		a.Type = t[0]
	}
	a.Large = readReplyUint(v[4]) == 1
	return a
}
