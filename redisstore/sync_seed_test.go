package redisstore

import (
	"context"
	"fmt"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/offlinebox/offlinebox/internal/testenv"
	"github.com/offlinebox/offlinebox/schemas"
)

const (
	direct = schemas.ConvType_CONV_TYPE_DIRECT
	group  = schemas.ConvType_CONV_TYPE_GROUP
)

// readTestStore is a store over a real redis-server with its own prefix.
func readTestStore(t *testing.T, threshold int) *Store {
	t.Helper()
	rdb, prefix := testenv.Redis(t)
	s, err := New(rdb, Config{Prefix: prefix, LargeGroupThreshold: threshold})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// readSeed builds conversations through the real sequencing script and
// writes the recipients' inbox fields as the inbox layout documents them
// (schemas/redis-keys.md), so the read path is tested on the layout.
type readSeed struct {
	t   *testing.T
	s   *Store
	now int64
	n   int
}

func newReadSeed(t *testing.T, s *Store) *readSeed {
	return &readSeed{t: t, s: s, now: 1_700_000_000_000}
}

// group creates a group with founding members.
func (rs *readSeed) group(conv string, members ...string) {
	m := &schemas.Message{ConvId: conv, ConvType: schemas.ConvType_CONV_TYPE_GROUP, Sender: members[0],
		Kind: schemas.Kind_KIND_MEMBER_JOIN, Recipients: members}
	rs.send(m)
}

// say appends a text message; it returns its seq.
func (rs *readSeed) say(conv string, typ schemas.ConvType, sender string, peer string, body string, mentions ...string) uint64 {
	m := &schemas.Message{ConvId: conv, ConvType: typ, Sender: sender, Kind: schemas.Kind_KIND_MESSAGE,
		ContentType: "text/plain", Body: []byte(body), Mentions: mentions}
	if typ == schemas.ConvType_CONV_TYPE_DIRECT {
		m.Recipients = []string{peer}
	}
	return rs.send(m)
}

// send sequences one record and delivers it to every member's inbox.
func (rs *readSeed) send(m *schemas.Message) uint64 {
	rs.t.Helper()
	ctx := context.Background()
	rs.n++
	rs.now++
	m.ClientMsgId = fmt.Sprintf("cm%d", rs.n)
	res, err := rs.s.Sequence(ctx, m.ConvId, []*schemas.Message{m}, nil, rs.now)
	if err != nil {
		rs.t.Fatal(err)
	}
	it := res.Items[0]
	if it.Status != SeqNew {
		rs.t.Fatalf("sequence %s: status %d %v", m.ClientMsgId, it.Status, it.Reason)
	}
	seq := it.Sequenced.Seq
	members, err := rs.s.rdb.HGetAll(ctx, rs.s.keys.Members(m.ConvId)).Result()
	if err != nil {
		rs.t.Fatal(err)
	}
	for u, j := range members {
		rs.deliver(u, m, seq, readReplyUint(j))
	}
	return seq
}

// deliver writes one recipient's inbox fields for a new seq.
func (rs *readSeed) deliver(u string, m *schemas.Message, seq, joined uint64) {
	ctx := context.Background()
	k, c := rs.s.keys, m.ConvId
	typ := "g"
	if m.ConvType == schemas.ConvType_CONV_TYPE_DIRECT {
		typ = "d"
	}
	p := rs.s.rdb.TxPipeline()
	if rs.s.rdb.HGet(ctx, k.Inbox(u), InboxField(c, FieldType)).Val() == string(InboxLarge) {
		typ = "L"
	} else {
		p.ZAdd(ctx, k.ConvList(u), zmember(c, rs.now))
	}
	p.HSetNX(ctx, k.Inbox(u), InboxField(c, FieldJoined), joined)
	p.HSet(ctx, k.Inbox(u), InboxField(c, FieldType), typ)
	if typ != "L" {
		p.HSet(ctx, k.Inbox(u), InboxField(c, FieldLast), seq)
		if u == m.Sender {
			p.HSet(ctx, k.Inbox(u), InboxField(c, FieldRead), seq)
			p.HSet(ctx, k.Inbox(u), InboxField(c, FieldUnread), 0)
		} else if seq > joined {
			p.HIncrBy(ctx, k.Inbox(u), InboxField(c, FieldUnread), 1)
		}
	}
	for _, mu := range m.Mentions {
		if mu == u && u != m.Sender {
			p.ZAdd(ctx, k.Mentions(u), zmember(MentionMember(c, seq), rs.now))
			p.ZAdd(ctx, k.MentionIndex(u), zmember(MentionMember(c, seq), 0))
		}
	}
	if _, err := p.Exec(ctx); err != nil {
		rs.t.Fatal(err)
	}
}

// makeLarge marks a group large for its members, as fanout does once it
// crosses the threshold.
func (rs *readSeed) makeLarge(conv string) {
	ctx := context.Background()
	k := rs.s.keys
	members := rs.s.rdb.HGetAll(ctx, k.Members(conv)).Val()
	rs.s.rdb.HSet(ctx, k.ConvMeta(conv), "large", 1)
	for u := range members {
		rs.s.rdb.ZRem(ctx, k.ConvList(u), conv)
		rs.s.rdb.HSet(ctx, k.Inbox(u), InboxField(conv, FieldType), "L")
		listLarge(rs.t, rs.s, u, conv)
	}
}

func zmember(m string, score int64) redis.Z { return redis.Z{Member: m, Score: float64(score)} }

func groupText(conv, sender, body string) *schemas.Message {
	return &schemas.Message{ConvId: conv, ConvType: schemas.ConvType_CONV_TYPE_GROUP, Sender: sender,
		Kind: schemas.Kind_KIND_MESSAGE, ContentType: "text/plain", Body: []byte(body)}
}
