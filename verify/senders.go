package verify

import (
	"context"

	"github.com/offlinebox/offlinebox/redisstore"
	"github.com/offlinebox/offlinebox/schemas"
)

// convSenders is the sender of every timeline entry of a conversation from
// first on, as last read.
type convSenders struct {
	epoch, first uint64
	senders      []string
	// notice[i]: the entry of senders[i] is a join or leave record
	notice []bool
}

// senderCache keeps the senders of the timelines unread recounts look at,
// so that a group's timeline is read once, not once per member. It is
// emptied when it grows past its bound.
type senderCache struct {
	store        *redisstore.Store
	chunk, limit int
	size         int
	convs        map[string]*convSenders
}

func newSenderCache(s *redisstore.Store, chunk, limit int) *senderCache {
	return &senderCache{store: s, chunk: chunk, limit: limit, convs: map[string]*convSenders{}}
}

// own counts the entries with lo < seq <= hi that user sent or that are
// join and leave notices (no one's unread), among those the timeline holds
// or held when read; head is the conversation's meta read just before.
func (c *senderCache) own(ctx context.Context, conv, user string, head redisstore.ConvHead, lo, hi uint64) (int, error) {
	cs, err := c.load(ctx, conv, head, hi)
	if err != nil {
		return 0, err
	}
	n := 0
	for s := max(lo+1, cs.first); s <= hi && s-cs.first < uint64(len(cs.senders)); s++ {
		if cs.senders[s-cs.first] == user || cs.notice[s-cs.first] {
			n++
		}
	}
	return n, nil
}

// load makes sure the cache holds the conversation's senders up to hi.
func (c *senderCache) load(ctx context.Context, conv string, head redisstore.ConvHead, hi uint64) (*convSenders, error) {
	cs := c.convs[conv]
	if cs == nil || cs.epoch != head.Epoch {
		if c.size > c.limit {
			c.convs, c.size = map[string]*convSenders{}, 0
		}
		cs = &convSenders{epoch: head.Epoch, first: head.First}
		c.convs[conv] = cs
	}
	for next := cs.first + uint64(len(cs.senders)); next <= hi; {
		h, entries, err := c.store.TimelineEntries(ctx, conv, next, next+uint64(c.chunk)-1)
		if err != nil {
			return nil, err
		}
		if h.First > next && len(cs.senders) == 0 {
			// Expiry raised the floor since the head was read.
			cs.first, next = h.First, h.First
		}
		if len(entries) == 0 || entries[0].GetSeq() != next {
			break
		}
		for _, e := range entries {
			cs.senders = append(cs.senders, e.GetMessage().GetSender())
			cs.notice = append(cs.notice, e.GetMessage().GetKind() != schemas.Kind_KIND_MESSAGE)
		}
		c.size += len(entries)
		next += uint64(len(entries))
	}
	return cs, nil
}
