package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/offlinebox/offlinebox/chstore"
	"github.com/offlinebox/offlinebox/internal/testenv"
	"github.com/offlinebox/offlinebox/redisstore"
	"github.com/offlinebox/offlinebox/schemas"
)

const explainPolicy = `defaults:
  inbox: 30d
  history: 365d
policies:
  - name: finance-audit
    match: {tag: finance}
    history: 180d
  - name: groups
    match: {conv_type: group}
    history: 30d
  - name: system-notices
    match: {content_type: system/notice}
    inbox: 7d
    history: 7d
`

// testStores are a test's own Redis prefix and migrated ClickHouse
// database, with the stores over them and the flags that name them.
type testStores struct {
	rdb    redis.UniversalClient
	prefix string
	redis  *redisstore.Store
	ch     *chstore.Store
	db     string
}

func newTestStores(t *testing.T) testStores {
	t.Helper()
	st := testStores{}
	st.rdb, st.prefix = testenv.Redis(t)
	var err error
	if st.redis, err = redisstore.New(st.rdb, redisstore.Config{Prefix: st.prefix}); err != nil {
		t.Fatal(err)
	}
	st.ch, st.db = testenv.History(t)
	return st
}

// flags name the stores as the tools' flags do.
func (st testStores) flags(t *testing.T) []string {
	return []string{"-redis", testenv.RedisAddr(t), "-prefix", st.prefix,
		"-clickhouse", testenv.ClickHouseAddr(t), "-clickhouse-db", st.db}
}

func TestRetentionExplainSaysWhichPolicyAppliesAndWhy(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	st := newTestStores(t)
	s, ch := st.redis, st.ch
	// g-fin lives in Redis; g-gone only in ClickHouse (Redis expired it).
	join := &schemas.Message{ClientMsgId: "j1", ConvId: "g-fin", ConvType: schemas.ConvType_CONV_TYPE_GROUP,
		Sender: "alice", Kind: schemas.Kind_KIND_MEMBER_JOIN, Recipients: []string{"alice"}, Tag: "finance"}
	if _, err := s.Sequence(ctx, "g-fin", []*schemas.Message{join}, nil, time.Now().UnixMilli()); err != nil {
		t.Fatal(err)
	}
	gone := &schemas.Sequenced{Seq: 1, Epoch: 1, WriteTimeMs: time.Now().UnixMilli(), Message: &schemas.Message{
		ClientMsgId: "j2", ConvId: "g-gone", ConvType: schemas.ConvType_CONV_TYPE_GROUP, Sender: "alice",
		Kind: schemas.Kind_KIND_MEMBER_JOIN, Recipients: []string{"alice"}, Tag: "finance"}}
	if err := ch.InsertBatch(ctx, []*schemas.Sequenced{gone}); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "retention.yaml")
	if err := os.WriteFile(path, []byte(explainPolicy), 0o600); err != nil {
		t.Fatal(err)
	}
	stores := append([]string{"-retention-policy", path}, st.flags(t)...)
	cases := []struct {
		name string
		args []string
		want []string
	}{
		{"from Redis", append([]string{"explain", "-conv", "g-fin"}, stores...), []string{
			`conversation g-fin: group, tag "finance" (from redis)`,
			"ordinary messages:\n  inbox    30d    from defaults\n  history  180d   from policy \"finance-audit\" (line 5)",
			`"finance-audit" (line 5: tag=finance)`, `"groups" (line 8: conv_type=group)`,
			"content_type system/notice:\n  inbox    7d     from policy \"system-notices\" (line 11)",
		}},
		{"from ClickHouse after Redis let it go", append([]string{"explain", "-conv", "g-gone"}, stores...), []string{
			`conversation g-gone: group, tag "finance" (from clickhouse)`, "history  180d",
		}},
		{"from flags, without the stores", []string{"explain", "-conv", "tmp-1", "-type", "direct", "-retention-policy", path}, []string{
			"conversation tmp-1: direct, no tag (from flags)", "history  365d   from defaults", "matching policies: none",
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var out bytes.Buffer
			if err := runRetention(ctx, c.args, &out); err != nil {
				t.Fatal(err)
			}
			for _, w := range c.want {
				if !strings.Contains(out.String(), w) {
					t.Errorf("output lacks %q:\n%s", w, out.String())
				}
			}
		})
	}
}

func TestRetentionCheckRefusesAMalformedFileNamingTheLine(t *testing.T) {
	path := filepath.Join(t.TempDir(), "retention.yaml")
	if err := os.WriteFile(path, []byte("policies:\n  - name: a\n    match: {tag: x}\n    history: forever\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	err := runRetention(context.Background(), []string{"check", "-retention-policy", path}, &out)
	if err == nil || !strings.Contains(err.Error(), path+" line 4") || !strings.Contains(err.Error(), "forever") {
		t.Fatalf("check said %v, want the file, line 4 and the bad value", err)
	}
}

func TestTheExpiryWorkerRefusesABadPolicyFileAtStartBeforeItWaitsForTheStores(t *testing.T) {
	path := filepath.Join(t.TempDir(), "retention.yaml")
	if err := os.WriteFile(path, []byte("defaults:\n  inbox: 30d\n  histroy: 1y\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	// Nothing listens on the stores' addresses: a worker would wait for
	// them forever, so only a check before connecting can answer.
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	err := runExpiry(ctx, []string{"-retention-policy", path, "-redis", "127.0.0.1:1", "-clickhouse", "127.0.0.1:1", "-metrics-listen", ""}, &bytes.Buffer{})
	if err == nil || !strings.Contains(err.Error(), path+" line 3") || !strings.Contains(err.Error(), "histroy") {
		t.Fatalf("expiry said %v, want the file refused at line 3", err)
	}
	if ctx.Err() != nil {
		t.Fatal("the refusal waited for the stores")
	}
}

func TestRebuildRestoresWhatTheRetentionPolicyKeeps(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	st := newTestStores(t)
	rdb, prefix, s, ch := st.rdb, st.prefix, st.redis, st.ch
	// History holds a finance group written 45 days ago; Redis lost it.
	at := time.Now().Add(-45 * 24 * time.Hour).UnixMilli()
	recs := []*schemas.Sequenced{
		{Seq: 1, Epoch: 1, WriteTimeMs: at, Message: &schemas.Message{ClientMsgId: "j", ConvId: "fin", ConvType: schemas.ConvType_CONV_TYPE_GROUP,
			Sender: "alice", Kind: schemas.Kind_KIND_MEMBER_JOIN, Recipients: []string{"alice"}, Tag: "finance"}},
		{Seq: 2, Epoch: 1, WriteTimeMs: at, Message: &schemas.Message{ClientMsgId: "m", ConvId: "fin", ConvType: schemas.ConvType_CONV_TYPE_GROUP,
			Sender: "alice", Kind: schemas.Kind_KIND_MESSAGE, ContentType: "text/plain", Body: []byte("q3")}},
	}
	if err := ch.InsertBatch(ctx, recs); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "retention.yaml")
	if err := os.WriteFile(path, []byte("policies:\n  - name: finance\n    match: {tag: finance}\n    inbox: 60d\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	stores := append([]string{"-conv", "fin"}, st.flags(t)...)
	for _, c := range []struct {
		name    string
		args    []string
		entries int
	}{
		{"the built-in 30 days", nil, 0},
		{"the policy's 60 days", []string{"-retention-policy", path}, 2},
	} {
		keys, _ := rdb.Keys(ctx, prefix+"{c:fin}*").Result()
		if len(keys) > 0 {
			if err := rdb.Del(ctx, keys...).Err(); err != nil {
				t.Fatal(err)
			}
		}
		if err := runRebuild(ctx, append(append([]string{}, stores...), c.args...), &bytes.Buffer{}); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		_, entries, err := s.TimelineEntries(ctx, "fin", 1, 10)
		if err != nil {
			t.Fatal(err)
		}
		if len(entries) != c.entries {
			t.Errorf("rebuilt under %s: %d entries, want %d", c.name, len(entries), c.entries)
		}
	}
}
