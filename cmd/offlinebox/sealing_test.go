package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/offlinebox/offlinebox/auth"
	"github.com/offlinebox/offlinebox/chstore"
	"github.com/offlinebox/offlinebox/client"
	"github.com/offlinebox/offlinebox/internal/testenv"
	"github.com/offlinebox/offlinebox/schemas"
)

// sealTraffic is the group conversation's messages: bodies long enough
// that an RDB would compress them, each unique so a scan can find it.
func sealTraffic(from, to int) []*schemas.Message {
	var out []*schemas.Message
	for i := from; i < to; i++ {
		sender := []string{"alice", "bob"}[i%2]
		out = append(out, &schemas.Message{ClientMsgId: fmt.Sprintf("vault-%03d", i), ConvId: "vault",
			ConvType: schemas.ConvType_CONV_TYPE_GROUP, Sender: sender, Kind: schemas.Kind_KIND_MESSAGE,
			ContentType: "text/plain", Body: []byte(sealPlain(i))})
	}
	return out
}

func sealPlain(i int) string { return fmt.Sprintf("quartz plaintext number %03d of the vault", i) }

// TestSealedPipelineLeavesNoPlaintextAtRestAndRotationLosesNothing runs
// traffic with a key ring, rotates the master key while traffic is in
// flight, reads every message back through the API, then scans a Redis
// RDB dump, every im.sequenced record and every ClickHouse row for the
// plaintexts.
func TestSealedPipelineLeavesNoPlaintextAtRestAndRotationLosesNothing(t *testing.T) {
	t.Setenv(masterKeysEnv, "")
	keyFile := filepath.Join(t.TempDir(), "keys.jsonl")
	if err := addMasterKey(keyFile, "m1", io.Discard); err != nil {
		t.Fatal(err)
	}
	base, cfg := startPipelineWith(t, func(c *stackConfig) { c.KeyFile = keyFile })
	const n = 60
	produce(t, cfg.kafkaBrokers(), &schemas.Message{ClientMsgId: "vault-create", ConvId: "vault",
		ConvType: schemas.ConvType_CONV_TYPE_GROUP, Sender: "alice", Kind: schemas.Kind_KIND_MEMBER_JOIN,
		Recipients: []string{"alice", "bob"}})
	produce(t, cfg.kafkaBrokers(), sealTraffic(0, n/2)...)

	// Rotate while the second half is in flight.
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		produce(t, cfg.kafkaBrokers(), sealTraffic(n/2, n)...)
	}()
	if err := addMasterKey(keyFile, "m2", io.Discard); err != nil {
		t.Fatal(err)
	}
	tool := []string{"-key-file", keyFile, "-redis", cfg.Redis, "-prefix", cfg.Prefix,
		"-clickhouse", cfg.ClickHouse, "-clickhouse-db", cfg.ClickHouseDB}
	var out bytes.Buffer
	if err := runKeys(ctx, append([]string{"rekey"}, tool...), &out); err != nil {
		t.Fatalf("rekey: %v", err)
	}
	wg.Wait()

	dev := deviceOf(t, base, "bob")
	// bob sent the last message: his unread is 0 once all n+1 arrived
	waitForList(ctx, t, dev, "bob", map[string]uint64{"vault": 0}, nil)
	for last := uint64(0); last != n+1; {
		list, _, err := dev.Conversations(ctx, 10)
		if err != nil || ctx.Err() != nil {
			t.Fatalf("waiting for seq %d: %v %v", n+1, err, ctx.Err())
		}
		for _, c := range list.Conversations {
			last = c.LastSeq
		}
		time.Sleep(50 * time.Millisecond)
	}
	// a fresh device syncs (Redis, sync encoder) and pages (messages route)
	resp, _, err := dev.Sync(ctx, client.SyncRequest{})
	if err != nil {
		t.Fatal(err)
	}
	var synced []client.Message
	for _, c := range resp.Conversations {
		if c.ConvID == "vault" {
			synced = c.Messages
		}
	}
	page, _, err := dev.PageAfter(ctx, "vault", 0, 0, 0, 200)
	if err != nil {
		t.Fatal(err)
	}
	for name, ms := range map[string][]client.Message{"sync": synced, "messages page": page.Messages} {
		opened := 0
		for _, m := range ms {
			if m.Seq >= 2 {
				if string(m.Body) != sealPlain(int(m.Seq)-2) {
					t.Fatalf("%s: seq %d reads %q, want %q", name, m.Seq, m.Body, sealPlain(int(m.Seq)-2))
				}
				opened++
			}
		}
		if opened != n {
			t.Fatalf("%s answered %d of %d messages", name, opened, n)
		}
	}
	if got := previewText(ctx, t, base, "bob", "vault"); got != sealPlain(n-1) {
		t.Fatalf("conversation list preview %q, want %q", got, sealPlain(n-1))
	}
	waitForClickHouse(ctx, t, cfg, "vault", n+1)
	assertHistoryOpens(ctx, t, base, n)

	// Nothing needs m1 any more once everything was rewrapped.
	if err := runKeys(ctx, append([]string{"rekey"}, tool...), &out); err != nil {
		t.Fatalf("rekey again: %v", err)
	}
	var list bytes.Buffer
	if err := runKeys(ctx, append([]string{"list"}, tool...), &list); err != nil {
		t.Fatalf("keys list: %v", err)
	}
	// vault's data key, and its durable copy, are m2's now; m1 wraps none.
	for _, want := range []string{"m1  0  0  wraps nothing: may be retired", "m2  1  1  newest"} {
		if !strings.Contains(strings.Join(strings.Fields(list.String()), " "), strings.Join(strings.Fields(want), " ")) {
			t.Errorf("keys list does not say %q:\n%s", want, list.String())
		}
	}
	if err := runKeys(ctx, append([]string{"retire", "-id", "m1"}, tool...), &out); err != nil {
		t.Fatalf("retire m1: %v", err)
	}

	plain := make([][]byte, n)
	for i := range plain {
		plain[i] = []byte(sealPlain(i))
	}
	scanRedisDump(t, cfg, plain)
	scanSequenced(ctx, t, cfg, n+1, plain)
	scanClickHouse(ctx, t, cfg, plain)
}

// previewText is the conversation list's preview of conv for user.
func previewText(ctx context.Context, t *testing.T, base, user, conv string) string {
	t.Helper()
	var body struct {
		Conversations []struct {
			ConvID  string `json:"conv_id"`
			Preview *struct {
				Text string `json:"text"`
			} `json:"preview"`
		} `json:"conversations"`
	}
	getJSON(ctx, t, base, user, "/v1/conversations", &body)
	for _, c := range body.Conversations {
		if c.ConvID == conv && c.Preview != nil {
			return c.Preview.Text
		}
	}
	return ""
}

func getJSON(ctx context.Context, t *testing.T, base, user, path string, out any) {
	t.Helper()
	kr, err := auth.New(auth.Config{Secret: []byte(testSecret)})
	if err != nil {
		t.Fatal(err)
	}
	tok, err := kr.Mint(user, "phone", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, base+path, nil)
	req.Header.Set("Authorization", "Bearer "+tok)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("GET %s: %d %s", path, resp.StatusCode, b)
	}
	if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
		t.Fatal(err)
	}
}

func waitForClickHouse(ctx context.Context, t *testing.T, cfg *stackConfig, conv string, n uint64) {
	t.Helper()
	ch, err := chstore.Open(ctx, chstore.Config{Addr: cfg.ClickHouse, Database: cfg.ClickHouseDB})
	if err != nil {
		t.Fatal(err)
	}
	defer ch.Close()
	var got uint64
	for ctx.Err() == nil {
		if got, err = ch.CountMessages(ctx, conv); err == nil && got == n {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("ClickHouse holds %d messages of %s, want %d (last error %v)", got, conv, n, err)
}

// assertHistoryOpens reads the conversation from ClickHouse through the
// API's history route: every body opens.
func assertHistoryOpens(ctx context.Context, t *testing.T, base string, n int) {
	t.Helper()
	dev := deviceOf(t, base, "alice")
	page, _, err := dev.History(ctx, "vault", 0, 0, 200)
	if err != nil {
		t.Fatal(err)
	}
	opened := 0
	for _, m := range page.Messages {
		if m.Seq >= 2 && string(m.Body) == sealPlain(int(m.Seq)-2) {
			opened++
		}
	}
	if opened != n {
		t.Fatalf("history opened %d of %d bodies", opened, n)
	}
}

// scanRedisDump takes an uncompressed RDB dump with redis-cli --rdb and
// looks for the plaintexts; the client_msg_ids (stored in the clear) must
// be found, so the scan can see what entries hold.
func scanRedisDump(t *testing.T, cfg *stackConfig, plain [][]byte) {
	t.Helper()
	host, port, _ := strings.Cut(cfg.Redis, ":")
	cli := func(args ...string) []byte {
		out, err := exec.Command("redis-cli", append([]string{"-h", host, "-p", port}, args...)...).CombinedOutput()
		if err != nil {
			t.Fatalf("redis-cli %v: %v\n%s", args, err, out)
		}
		return out
	}
	old := strings.Fields(string(cli("CONFIG", "GET", "rdbcompression")))
	cli("CONFIG", "SET", "rdbcompression", "no")
	if len(old) == 2 {
		defer cli("CONFIG", "SET", "rdbcompression", old[1])
	}
	path := filepath.Join(t.TempDir(), "dump.rdb")
	cli("--rdb", path)
	dump, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(dump, []byte("vault-042")) {
		t.Fatalf("the %d-byte dump does not hold the ids it should: the scan sees nothing", len(dump))
	}
	for _, p := range plain {
		if bytes.Contains(dump, p) {
			t.Fatalf("Redis dump holds the plaintext %q", p)
		}
	}
	// the preview prefix, in case a preview is stored in the clear
	if bytes.Contains(dump, []byte("quartz plaintext")) {
		t.Fatal("Redis dump holds a plaintext preview")
	}
}

func scanSequenced(ctx context.Context, t *testing.T, cfg *stackConfig, want int, plain [][]byte) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(cfg.kafkaBrokers()...), kgo.ConsumeTopics(schemas.TopicSequenced),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	seen := map[string]bool{}
	for len(seen) < want && ctx.Err() == nil {
		fctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		fs := cl.PollFetches(fctx)
		cancel()
		fs.EachRecord(func(r *kgo.Record) {
			sq, err := schemas.DecodeSequenced(r.Value)
			if err != nil {
				t.Fatalf("im.sequenced record: %v", err)
			}
			if sq.GetMessage().GetConvId() != "vault" {
				return
			}
			seen[sq.GetMessage().GetClientMsgId()] = true
			for _, p := range plain {
				if bytes.Contains(r.Value, p) {
					t.Fatalf("im.sequenced record %s holds the plaintext %q", sq.GetMessage().GetClientMsgId(), p)
				}
			}
		})
	}
	if len(seen) < want {
		t.Fatalf("read %d records of im.sequenced, want %d", len(seen), want)
	}
}

func scanClickHouse(ctx context.Context, t *testing.T, cfg *stackConfig, plain [][]byte) {
	t.Helper()
	ch, err := chstore.Open(ctx, chstore.Config{Addr: cfg.ClickHouse, Database: cfg.ClickHouseDB})
	if err != nil {
		t.Fatal(err)
	}
	defer ch.Close()
	_, tables, err := ch.Query(ctx, "SHOW TABLES")
	if err != nil {
		t.Fatal(err)
	}
	var all strings.Builder
	for _, tb := range tables {
		_, rows, err := ch.Query(ctx, "SELECT * FROM "+tb[0])
		if err != nil {
			t.Fatalf("read %s: %v", tb[0], err)
		}
		for _, r := range rows {
			all.WriteString(strings.Join(r, "\t"))
			all.WriteByte('\n')
		}
	}
	if !strings.Contains(all.String(), "vault-042") {
		t.Fatalf("ClickHouse rows (%d bytes) lack the ids they should hold: the scan sees nothing", all.Len())
	}
	for _, p := range plain {
		if strings.Contains(all.String(), string(p)) {
			t.Fatalf("a ClickHouse row holds the plaintext %q", p)
		}
	}
}

// TestAStartWithAWrongOrMissingMasterKeyFails starts over a sealed store
// with another ring and with none.
func TestAStartWithAWrongOrMissingMasterKeyFails(t *testing.T) {
	t.Setenv(masterKeysEnv, "")
	dir := t.TempDir()
	good, wrong := filepath.Join(dir, "good.jsonl"), filepath.Join(dir, "wrong.jsonl")
	for _, f := range []string{good, wrong} {
		if err := addMasterKey(f, "m1", io.Discard); err != nil {
			t.Fatal(err)
		}
	}
	other := filepath.Join(dir, "other.jsonl")
	if err := addMasterKey(other, "m9", io.Discard); err != nil {
		t.Fatal(err)
	}
	// a sealing start opens ClickHouse too (the durable data keys)
	cfg := &stackConfig{Redis: testenv.RedisAddr(t), Prefix: testenv.UniquePrefix(t),
		ClickHouse: testenv.ClickHouseAddr(t), ClickHouseDB: testenv.UniqueDatabase(t), ClickHouseUser: "default"}
	ctx := context.Background()
	cfg.KeyFile = good
	p, err := open(ctx, cfg, needs{redis: true})
	if err != nil {
		t.Fatalf("first start: %v", err)
	}
	p.close()
	tests := []struct {
		name, keyFile, want string
	}{
		{"same id, another key", wrong, "is not the one that wrapped"},
		{"the key is missing from the ring", other, "is not in the key ring"},
		{"no key ring at all", "", "no key ring is configured"},
		{"an unreadable key file", filepath.Join(dir, "absent.jsonl"), "no such file"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := *cfg
			c.KeyFile = tc.keyFile
			p, err := open(ctx, &c, needs{redis: true})
			if err == nil {
				p.close()
				t.Fatal("started")
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want one saying %q", err, tc.want)
			}
		})
	}
}
