package verify

import (
	"context"
	"slices"

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
	// named[i], all[i] and wms[i]: whom the entry mentions by name,
	// whether it mentions everyone, its write time
	named [][]string
	all   []bool
	wms   []int64
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

// pendingMention is a message that mentions a user: its seq and write time.
type pendingMention struct {
	seq uint64
	wms int64
}

// mentionsOf lists the messages with lo < seq <= hi that mention user and
// that user did not send, among those the timeline holds or held when
// read: by name, or with byAll also @all (a small group's).
func (c *senderCache) mentionsOf(ctx context.Context, conv, user string, head redisstore.ConvHead, lo, hi uint64, byAll bool) ([]pendingMention, error) {
	cs, err := c.load(ctx, conv, head, hi)
	if err != nil {
		return nil, err
	}
	var out []pendingMention
	for s := max(lo+1, cs.first); s <= hi && s-cs.first < uint64(len(cs.senders)); s++ {
		i := s - cs.first
		if cs.notice[i] || cs.senders[i] == user {
			continue
		}
		if (byAll && cs.all[i]) || slices.Contains(cs.named[i], user) {
			out = append(out, pendingMention{seq: s, wms: cs.wms[i]})
		}
	}
	return out, nil
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
			m := e.GetMessage()
			cs.senders = append(cs.senders, m.GetSender())
			cs.notice = append(cs.notice, m.GetKind() != schemas.Kind_KIND_MESSAGE)
			cs.named = append(cs.named, m.GetMentions())
			cs.all = append(cs.all, m.GetMentionAll())
			cs.wms = append(cs.wms, e.GetWriteTimeMs())
		}
		c.size += len(entries)
		next += uint64(len(entries))
	}
	return cs, nil
}
