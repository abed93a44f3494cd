package fanout

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"

	"github.com/offlinebox/offlinebox/internal/testenv"
	"github.com/offlinebox/offlinebox/redisstore"
)

// A restore that meets an inbox update, a large group's member listing or
// its conversion mark that can never succeed says so as what it is: not
// re-applied, counted in the restore's series, the restore going on. No
// line says dead-lettered: a restore produces no letters (its records are
// im.sequenced's). The live batch's lines for the same failures are the
// store_dead and inbox_dead tests'.
func TestARestoreLogsTheFailuresForGoodItMeetsAsNotReappliedNeverAsDeadLettered(t *testing.T) {
	ctx := context.Background()
	members := users("u", 6)
	for _, tc := range []struct {
		name    string
		failure string // what the restore's line names
		call    string // the restore_unapplied_records series' call; "" for inbox updates
		// broken breaks a key of g after it was handled; it returns the
		// client the restoring worker uses (nil: the harness's).
		broken func(t *testing.T, h *harness) redis.UniversalClient
	}{
		{"an inbox", "inbox updates that can never succeed", "", func(t *testing.T, h *harness) redis.UniversalClient {
			bad := h.store.Keys().Inbox(members[2])
			if err := h.rdb.Del(ctx, bad).Err(); err != nil {
				t.Fatal(err)
			}
			if err := h.rdb.Set(ctx, bad, "someone's string", 0).Err(); err != nil {
				t.Fatal(err)
			}
			return nil
		}},
		{"the members of a large group", "the members of a large group can never be listed", deadMembers,
			func(t *testing.T, h *harness) redis.UniversalClient {
				k := h.store.Keys()
				if err := h.rdb.HSet(ctx, k.Members("g"), "zz", "not a seq").Err(); err != nil {
					t.Fatal(err)
				}
				if err := h.rdb.HDel(ctx, k.ConvMeta("g"), redisstore.MetaLargeConverted).Err(); err != nil {
					t.Fatal(err)
				}
				return nil
			}},
		{"a large group's conversion mark", "a large group's conversion mark can never be written", deadMarkLarge,
			func(t *testing.T, h *harness) redis.UniversalClient {
				if err := h.rdb.HDel(ctx, h.store.Keys().ConvMeta("g"), redisstore.MetaLargeConverted).Err(); err != nil {
					t.Fatal(err)
				}
				sick := redis.NewClient(&redis.Options{Addr: testenv.RedisAddr(t)})
				t.Cleanup(func() { _ = sick.Close() })
				sick.AddHook(refuseScript{sha: markLargeSHA(t)})
				return sick
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			group, cfg := members[:3], Config{}
			if tc.call != "" { // a group large from its creation
				group, cfg = members, Config{Store: redisstoreConfigLarge(5)}
			}
			h := newHarness(t, cfg)
			handle(t, h.fanout(nil), records(msg("g", "create", group[0], join(group...)), msg("g", "g-1", group[1])))
			rdb := tc.broken(t, h)
			// The server lost its fence: the next worker replays g.
			if err := h.rdb.Del(ctx, h.store.Keys().Applied(0)).Err(); err != nil {
				t.Fatal(err)
			}

			logs := &logSink{}
			reg := prometheus.NewRegistry()
			cfg = h.cfg
			cfg.Metrics = reg
			cfg.Logger = slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelInfo}))
			t.Cleanup(func() {
				if t.Failed() {
					t.Logf("the worker logged:\n%s", strings.Join(logs.lines(), "\n"))
				}
			})
			handle(t, h.fanoutWith(rdb, cfg), records(msg("d", "hi", "a", to("b")))) // the restore runs first

			unapplied := counter(t, reg, "offlinebox_fanout_restore_unapplied_inbox_updates_total")
			if tc.call != "" {
				unapplied = counterWith(t, reg, "offlinebox_fanout_restore_unapplied_records_total", "call", tc.call)
			}
			if unapplied < 1 {
				t.Fatalf("the restore counted %v as not re-applied, want the failure counted; the test proves nothing", unapplied)
			}
			if dead := logs.lines("dead-letter"); len(dead) > 0 {
				t.Errorf("a restore logged records as dead-lettered:\n%s", strings.Join(dead, "\n"))
			}
			if said := logs.lines("conv=g ", "restore: "+tc.failure, "not re-applied"); len(said) == 0 {
				t.Errorf("no line says of g %q and that it is not re-applied", tc.failure)
			}
		})
	}
}

// refuseScript answers every call of one script (by its SHA) with an error
// the same call can never change, without running it.
type refuseScript struct{ sha string }

func (refuseScript) DialHook(next redis.DialHook) redis.DialHook { return next }

func (r refuseScript) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if args := cmd.Args(); len(args) > 1 && (cmd.Name() == "evalsha" && fmt.Sprint(args[1]) == r.sha) {
			cmd.SetErr(serverReply("ERR refused by the test"))
			return cmd.Err()
		}
		return next(ctx, cmd)
	}
}

func (refuseScript) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

// serverReply is a server's error reply (redis.Error).
type serverReply string

func (e serverReply) Error() string { return string(e) }
func (serverReply) RedisError()     {}

// markLargeSHA is the SHA the store runs lua/mark_large.lua by: the fence
// library comes first (redisstore/fence.go).
func markLargeSHA(t *testing.T) string {
	t.Helper()
	var src []byte
	for _, name := range []string{"fence_lib.lua", "mark_large.lua"} {
		b, err := os.ReadFile("../../redisstore/lua/" + name)
		if err != nil {
			t.Fatal(err)
		}
		src = append(src, b...)
	}
	sum := sha1.Sum(src)
	return hex.EncodeToString(sum[:])
}
