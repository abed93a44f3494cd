package rebuild

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"
	"google.golang.org/protobuf/proto"

	"github.com/offlinebox/offlinebox/internal/storetest"
	"github.com/offlinebox/offlinebox/internal/testenv"
	"github.com/offlinebox/offlinebox/redisstore"
	"github.com/offlinebox/offlinebox/redisstore/readpath"
	"github.com/offlinebox/offlinebox/schemas"
)

// rig is a store over a real redis-server with its own prefix, the
// Rebuilder over it, and the client and keys the tests read Redis with.
type rig struct {
	*redisstore.Store
	*Rebuilder
	rdb  redis.UniversalClient
	keys redisstore.Keys
	// reads is the read path over the store, for tests that look through it.
	reads *readpath.Reader
}

func newRig(t *testing.T, threshold int) *rig {
	t.Helper()
	rdb, prefix := testenv.Redis(t)
	st, err := redisstore.New(rdb, redisstore.Config{Prefix: prefix, LargeGroupThreshold: threshold})
	if err != nil {
		t.Fatal(err)
	}
	return &rig{Store: st, Rebuilder: New(st), rdb: st.Client(), keys: st.Keys(), reads: readpath.New(redisstore.NewInboxRouter(st, nil, 0))}
}

// expStore is a store with the default configuration.
func expStore(t *testing.T) *rig {
	t.Helper()
	return newRig(t, 0)
}

// rbStore's group turns large when dave and erin join (see rbSeed).
func rbStore(t *testing.T) *rig {
	t.Helper()
	return newRig(t, 3)
}

// expDay, expNow, expMsg: internal/storetest's, the core's tests' too
// (expNow is the fake "now" retention is measured against).
const expDay = storetest.Day

var (
	expNow = storetest.Now
	expMsg = storetest.Msg
)

// refusalHeld is the word sequencing refuses a held conversation with.
const refusalHeld = "OBHELD"

func expMeta(t *testing.T, s *rig, conv string) (seq, first uint64) {
	t.Helper()
	return storetest.Meta(t, s.rdb, s.keys.ConvMeta(conv))
}

// indexDrift, testSizer and syncReq are the core's tests' own as well;
// they name redisstore's types, so they cannot move to internal/storetest,
// which the core's in-package tests import (and which therefore must not
// import redisstore).

// indexDrift describes how a user's list indexes differ from the inbox and
// lane they index ("" when they agree), and whether they are built.
func indexDrift(t *testing.T, s *rig, user string) (drift string, built bool) {
	t.Helper()
	ix, err := s.ReadListIndex(context.Background(), user)
	if err != nil {
		t.Fatal(err)
	}
	sorted := func(v []string) string { return fmt.Sprint(slices.Sorted(slices.Values(v))) }
	if a, b := sorted(ix.Large), sorted(ix.InboxLarge); a != b {
		drift += fmt.Sprintf("large set %s, inbox L %s; ", a, b)
	}
	if a, b := sorted(ix.Index), sorted(ix.Lane); a != b {
		drift += fmt.Sprintf("mention index %s, lane %s", a, b)
	}
	return drift, ix.Built
}

// listLarge adds conv to user's InboxLargeGroups, as the inbox script does.
func listLarge(t *testing.T, s *rig, user, conv string) {
	t.Helper()
	ctx := context.Background()
	v, _ := s.rdb.HGet(ctx, s.keys.Inbox(user), redisstore.InboxLargeGroups).Result()
	if v == "" {
		v = "\n"
	}
	if !strings.Contains(v, "\n"+conv+"\n") {
		if err := s.rdb.HSet(ctx, s.keys.Inbox(user), redisstore.InboxLargeGroups, v+conv+"\n").Err(); err != nil {
			t.Fatal(err)
		}
	}
}

type testSizer struct{}

func (testSizer) Envelope() int                      { return 100 }
func (testSizer) Mention(m readpath.SyncMention) int { return proto.Size(m.Message) + 60 }

func (testSizer) Conv(*readpath.SyncConv) int      { return 120 }
func (testSizer) Message(m *schemas.Sequenced) int { return proto.Size(m) + 40 }
func (testSizer) Summary(readpath.SyncSummary) int { return 100 }

func syncReq(user, device string, limit, budget int) readpath.SyncRequest {
	return readpath.SyncRequest{User: user, Device: device, Limit: limit, MaxBytes: budget, Sizer: testSizer{},
		Cursors: map[string]redisstore.Position{}}
}
