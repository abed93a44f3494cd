package redisstore

import (
	"context"
	"fmt"
	"strconv"

	"github.com/redis/go-redis/v9"

	"github.com/offlinebox/offlinebox/schemas"
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
	// Left: the user was a member and is not now.
	Left bool
	// Spans are the stretches the user belonged to, oldest first; while
	// they are a member the last one is the current (Left 0).
	Spans []MemberSpan
	// Type as recorded in meta; UNSPECIFIED when absent.
	Type  schemas.ConvType
	Large bool
	Seq   uint64
	Epoch uint64
	First uint64
}

// ConversationAccess reads, for each conversation, its counters and whether
// user is a member. One pipeline; each conversation's reads stay in its
// slot.
func (s *Store) ConversationAccess(ctx context.Context, user string, convs []string) (map[string]ConvAccess, error) {
	return s.conversationAccess(ctx, user, convs, true)
}

// ConversationBounds is ConversationAccess for checking seqs a user names
// (acks, reads, receipts): Member, Left, Seq, Epoch, Large and, for a
// former member, LastReadable are as ConversationAccess reads them, but a
// current member's earlier spans are not read (Spans holds the current
// one only). That is a command less per conversation on every ack; a user
// who is not a member has the past spans read in a second pipeline.
func (s *Store) ConversationBounds(ctx context.Context, user string, convs []string) (map[string]ConvAccess, error) {
	return s.conversationAccess(ctx, user, convs, false)
}

func (s *Store) conversationAccess(ctx context.Context, user string, convs []string, allSpans bool) (map[string]ConvAccess, error) {
	ctx, cancel := context.WithTimeout(ctx, s.cfg.CallTimeout)
	defer cancel()
	metas := make([]*redis.SliceCmd, len(convs))
	mems := make([]*redis.StringCmd, len(convs))
	pasts := make([]*redis.StringCmd, len(convs))
	_, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, c := range convs {
			metas[i] = p.HMGet(ctx, s.keys.ConvMeta(c), MetaSeq, MetaEpoch, MetaFirst, MetaType, MetaLarge)
			mems[i] = p.HGet(ctx, s.keys.Members(c), user)
			if allSpans {
				pasts[i] = p.HGet(ctx, s.keys.PastMembers(c), user)
			}
		}
		return nil
	})
	if err != nil && err != redis.Nil {
		return nil, fmt.Errorf("read access of %s to %d conversations: %w", user, len(convs), err)
	}
	if !allSpans {
		if err := s.readPastOfStrangers(ctx, user, convs, mems, pasts); err != nil {
			return nil, err
		}
	}
	out := make(map[string]ConvAccess, len(convs))
	for i, c := range convs {
		// A pipeline's error is its first command's: a redis.Nil there
		// hides whatever failed after it, so each reply is looked at.
		if err := metas[i].Err(); err != nil {
			return nil, fmt.Errorf("read conversation %s: %w", c, err)
		}
		a := convAccessOf(c, metas[i].Val())
		if pasts[i] != nil {
			if err := pasts[i].Err(); err != nil && err != redis.Nil {
				return nil, fmt.Errorf("read past membership of %s in %s: %w", user, c, err)
			}
			a.Spans = ParsePastSpans(pasts[i].Val())
		}
		if j, err := mems[i].Result(); err == nil {
			a.Member = true
			a.Joined, _ = strconv.ParseUint(j, 10, 64)
			a.Spans = append(a.Spans, MemberSpan{Joined: a.Joined})
		} else if err != redis.Nil {
			return nil, fmt.Errorf("read membership of %s in %s: %w", user, c, err)
		}
		a.Left = !a.Member && len(a.Spans) > 0
		out[c] = a
	}
	return out, nil
}

// readPastOfStrangers reads, in one pipeline, the past spans of user in
// the conversations mems says they are not a member of now.
func (s *Store) readPastOfStrangers(ctx context.Context, user string, convs []string, mems, pasts []*redis.StringCmd) error {
	var strangers []int
	for i := range convs {
		if mems[i].Err() == redis.Nil {
			strangers = append(strangers, i)
		}
	}
	if len(strangers) == 0 {
		return nil
	}
	_, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for _, i := range strangers {
			pasts[i] = p.HGet(ctx, s.keys.PastMembers(convs[i]), user)
		}
		return nil
	})
	if err != nil && err != redis.Nil {
		return fmt.Errorf("read past membership of %s in %d conversations: %w", user, len(strangers), err)
	}
	return nil
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
	a.Type = ConvTypeOfCode(readReplyString(v[3]))
	a.Large = readReplyUint(v[4]) == 1
	return a
}

// Reads reports whether the user may read seq: it lies in a span they
// belonged to.
func (a ConvAccess) Reads(seq uint64) bool {
	for _, sp := range a.Spans {
		if sp.Reads(seq) {
			return true
		}
	}
	return false
}

// LastReadable is the highest seq the user may read (0: none): the
// conversation's last for a member, the last before they left for a
// former member.
func (a ConvAccess) LastReadable() uint64 {
	return a.ReadableBelow(a.Seq + 1)
}

// ReadableBelow is the highest seq below before that the user may read
// (0: none); the current span has no end.
func (a ConvAccess) ReadableBelow(before uint64) uint64 {
	if before == 0 {
		return 0
	}
	for i := len(a.Spans) - 1; i >= 0; i-- {
		sp := a.Spans[i]
		top := before - 1
		if sp.Left != 0 {
			top = min(top, sp.Left-1)
		}
		if top > sp.Joined {
			return top
		}
	}
	return 0
}

// MemberAcross reports whether the user was a member across seq s: from at
// or before s to after s+1, so that what another epoch holds above s
// (a timeline that parted from the current one there) was sent to them.
func (a ConvAccess) MemberAcross(s uint64) bool {
	for _, sp := range a.Spans {
		if sp.Joined <= s && (sp.Left == 0 || sp.Left > s+1) {
			return true
		}
	}
	return false
}
