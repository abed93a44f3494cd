package naive

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
	"google.golang.org/protobuf/proto"

	"github.com/offlinebox/offlinebox/client"
	"github.com/offlinebox/offlinebox/schemas"
)

// PerConvCut is the old design's per-conversation limit of one pull.
const PerConvCut = 200

// Flat is the flat per-user inbox.
type Flat struct {
	rdb    *redis.Client
	prefix string
	// sem bounds the recipient writes in flight at once, over every
	// Deliver call.
	sem chan struct{}
}

// NewFlat is a flat inbox under prefix.
func NewFlat(rdb *redis.Client, prefix string, workers int) *Flat {
	return &Flat{rdb: rdb, prefix: prefix, sem: make(chan struct{}, max(1, workers))}
}

func (f *Flat) inbox(user string) string { return f.prefix + "{u:" + user + "}:flat" }
func (f *Flat) seq(conv string) string   { return f.prefix + "{c:" + conv + "}:seq" }

// Deliver writes each message, in order, to its recipients: one INCR for
// the conversation seq, then one RPUSH of a full copy per recipient, every
// command its own round trip. Messages of one conversation stay in order;
// recipients are written by up to workers (NewFlat) at once, over all
// Deliver calls.
func (f *Flat) Deliver(ctx context.Context, msgs []*schemas.Message, recipients func(m *schemas.Message) []string) error {
	sem := f.sem
	for _, m := range msgs {
		seq, err := f.rdb.Incr(ctx, f.seq(m.GetConvId())).Result()
		if err != nil {
			return fmt.Errorf("naive seq %s: %w", m.GetConvId(), err)
		}
		entry, err := proto.Marshal(&schemas.Sequenced{Message: m, Seq: uint64(seq), WriteTimeMs: time.Now().UnixMilli()})
		if err != nil {
			return err
		}
		var wg sync.WaitGroup
		var mu sync.Mutex
		var first error
		for _, u := range recipients(m) {
			sem <- struct{}{}
			wg.Add(1)
			go func() {
				defer func() { <-sem; wg.Done() }()
				if err := f.rdb.RPush(ctx, f.inbox(u), entry).Err(); err != nil {
					mu.Lock()
					first = fmt.Errorf("naive inbox %s: %w", u, err)
					mu.Unlock()
				}
			}()
		}
		wg.Wait()
		if first != nil {
			return first
		}
	}
	return nil
}

// BoxConv is one conversation of a pull.
type BoxConv struct {
	ConvID   string           `json:"conv_id"`
	HasMore  bool             `json:"has_more"`
	Messages []client.Message `json:"messages"`
}

// Box is the answer of one pull.
type Box struct {
	// Cursor is the user seq the client continues from.
	Cursor        int64     `json:"cursor"`
	Conversations []BoxConv `json:"conversations"`
}

// Pull reads the user's inbox after seq `after` and returns the box: per
// conversation its newest PerConvCut messages, everything older dropped,
// the cursor at the end (what the old system did).
func (f *Flat) Pull(ctx context.Context, user string, after int64) (*Box, error) {
	const chunk = 10000
	byConv := map[string][]*schemas.Sequenced{}
	var order []string
	next := after
	for {
		raw, err := f.rdb.LRange(ctx, f.inbox(user), next, next+chunk-1).Result()
		if err != nil {
			return nil, fmt.Errorf("naive pull %s: %w", user, err)
		}
		for _, r := range raw {
			var sq schemas.Sequenced
			if err := proto.Unmarshal([]byte(r), &sq); err != nil {
				return nil, fmt.Errorf("naive pull %s: decode: %w", user, err)
			}
			c := sq.GetMessage().GetConvId()
			if _, ok := byConv[c]; !ok {
				order = append(order, c)
			}
			byConv[c] = append(byConv[c], &sq)
		}
		next += int64(len(raw))
		if len(raw) < chunk {
			break
		}
	}
	box := &Box{Cursor: next}
	for _, c := range order {
		ms := byConv[c]
		bc := BoxConv{ConvID: c, HasMore: len(ms) > PerConvCut}
		if bc.HasMore {
			ms = ms[len(ms)-PerConvCut:]
		}
		sort.Slice(ms, func(i, j int) bool { return ms[i].GetSeq() < ms[j].GetSeq() })
		for _, sq := range ms {
			bc.Messages = append(bc.Messages, toMessage(sq))
		}
		box.Conversations = append(box.Conversations, bc)
	}
	return box, nil
}

func toMessage(sq *schemas.Sequenced) client.Message {
	m := sq.GetMessage()
	ct := "group"
	if m.GetConvType() == schemas.ConvType_CONV_TYPE_DIRECT {
		ct = "direct"
	}
	return client.Message{ConvID: m.GetConvId(), Seq: sq.GetSeq(), Epoch: sq.GetEpoch(), WriteTimeMS: sq.GetWriteTimeMs(),
		ClientMsgID: m.GetClientMsgId(), ConvType: ct, Kind: "message", Sender: m.GetSender(),
		Recipients: m.GetRecipients(), Mentions: m.GetMentions(), MentionAll: m.GetMentionAll(),
		ContentType: m.GetContentType(), Body: m.GetBody(), SendTimeMS: m.GetSendTimeMs()}
}
