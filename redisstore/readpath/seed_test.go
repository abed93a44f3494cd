package readpath

import (
	"context"
	"fmt"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/offlinebox/offlinebox/internal/testenv"
	"github.com/offlinebox/offlinebox/schemas"

	"github.com/offlinebox/offlinebox/redisstore"
)

const (
	direct = schemas.ConvType_CONV_TYPE_DIRECT
	group  = schemas.ConvType_CONV_TYPE_GROUP
)

// rig is a store over a real redis-server with its own prefix, the Reader
// over it, and the client, keys and configuration the tests read Redis
// with. The seed (below) is redisstore's sync_seed_test.go's, over a rig.
type rig struct {
	*redisstore.Store
	*Reader
	rdb  redis.UniversalClient
	keys redisstore.Keys
	cfg  redisstore.Config
}

// readTestStore is a rig whose groups turn large above threshold members.
func readTestStore(t *testing.T, threshold int) *rig {
	t.Helper()
	rdb, prefix := testenv.Redis(t)
	return rigOver(t, rdb, redisstore.Config{Prefix: prefix, LargeGroupThreshold: threshold})
}

// rigOver is a rig over rdb with cfg.
func rigOver(t *testing.T, rdb redis.UniversalClient, cfg redisstore.Config) *rig {
	t.Helper()
	s, err := newRig(rdb, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// newRig is a rig over rdb with cfg, or cfg's error.
func newRig(rdb redis.UniversalClient, cfg redisstore.Config) (*rig, error) {
	st, err := redisstore.New(rdb, cfg)
	if err != nil {
		return nil, err
	}
	return &rig{Store: st, Reader: New(redisstore.NewInboxRouter(st, nil, 0)), rdb: rdb, keys: st.Keys(), cfg: st.Config()}, nil
}

// readSeed builds conversations through the real write path, as fanout
// does: the sequencing script, the inbox plan, and the inbox script.
type readSeed struct {
	t   *testing.T
	s   *rig
	now int64
	n   int
}

func newReadSeed(t *testing.T, s *rig) *readSeed {
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

// send sequences one record and applies its inbox plan, converting the
// members of a group that just became large as fanout does.
func (rs *readSeed) send(m *schemas.Message) uint64 {
	rs.t.Helper()
	ctx := context.Background()
	rs.n++
	rs.now++
	m.ClientMsgId = fmt.Sprintf("cm%d", rs.n)
	msgs := []*schemas.Message{m}
	res, err := rs.s.Sequence(ctx, m.ConvId, msgs, redisstore.ProbeUsers(msgs), rs.now)
	if err != nil {
		rs.t.Fatal(err)
	}
	it := res.Items[0]
	if it.Status != redisstore.SeqNew {
		rs.t.Fatalf("sequence %s: status %d %v", m.ClientMsgId, it.Status, it.Reason)
	}
	var all map[string]uint64
	if res.LargeFrom > 0 && !res.LargeConverted {
		if all, err = rs.s.Members(ctx, m.ConvId); err != nil {
			rs.t.Fatal(err)
		}
	}
	_, errs := rs.s.ApplyInboxes(ctx, redisstore.PlanInbox(m.ConvId, res, all))
	for _, err := range errs {
		if err != nil {
			rs.t.Fatal(err)
		}
	}
	if all != nil {
		if err := rs.s.MarkLargeConverted(ctx, m.ConvId); err != nil {
			rs.t.Fatal(err)
		}
	}
	return it.Sequenced.Seq
}

// growLarge adds members to a group, in one join, until it is above the
// store's large-group threshold: the group turns large as a growing one
// does.
func (rs *readSeed) growLarge(conv, by string) {
	rs.t.Helper()
	members, err := rs.s.Members(context.Background(), conv)
	if err != nil {
		rs.t.Fatal(err)
	}
	var joiners []string
	for i := len(members); i <= rs.s.cfg.LargeGroupThreshold; i++ {
		joiners = append(joiners, fmt.Sprintf("joiner%d", i))
	}
	rs.send(&schemas.Message{ConvId: conv, ConvType: schemas.ConvType_CONV_TYPE_GROUP, Sender: by,
		Kind: schemas.Kind_KIND_MEMBER_JOIN, Recipients: joiners})
}

func groupText(conv, sender, body string) *schemas.Message {
	return &schemas.Message{ConvId: conv, ConvType: schemas.ConvType_CONV_TYPE_GROUP, Sender: sender,
		Kind: schemas.Kind_KIND_MESSAGE, ContentType: "text/plain", Body: []byte(body)}
}
