package redisstore

import (
	"context"
	"errors"
	"fmt"
	"io"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/offlinebox/offlinebox/internal/testenv"
)

// The server's replies are the server's own: each is answered by a real
// redis-server (most through a script that answers the error as a
// server would, since a test cannot make a server load or fail over), and
// read by go-redis as every call reads them.
func TestPermanentTellsAReplyTheSameCallRepeatsFromAStoreToWaitFor(t *testing.T) {
	rdb, prefix := testenv.Redis(t)
	ctx := context.Background()
	str := prefix + "{u:x}:ib"
	if err := rdb.Set(ctx, str, "a string", 0).Err(); err != nil {
		t.Fatal(err)
	}
	answered := func(reply string) func() error {
		return func() error { return rdb.Eval(ctx, "return redis.error_reply(ARGV[1])", nil, reply).Err() }
	}
	port, err := testenv.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	down := redis.NewClient(&redis.Options{Addr: fmt.Sprintf("127.0.0.1:%d", port), MaxRetries: -1})
	t.Cleanup(func() { _ = down.Close() })
	closed := redis.NewClient(&redis.Options{Addr: testenv.RedisAddr(t)})
	_ = closed.Close()
	timed := redis.NewClient(&redis.Options{Addr: testenv.RedisAddr(t), ContextTimeoutEnabled: true, MaxRetries: -1})
	t.Cleanup(func() { _ = timed.Close() })
	cases := []struct {
		name      string
		err       func() error
		permanent bool
	}{
		{"a command on a key of the wrong type", func() error { return rdb.HGet(ctx, str, "f").Err() }, true},
		{"a script's command on a key of the wrong type", func() error {
			return rdb.Eval(ctx, "return redis.call('HGET', KEYS[1], 'f')", []string{str}).Err()
		}, true},
		{"a script's own error", func() error { return rdb.Eval(ctx, "local x = nil; return x.y", nil).Err() }, true},
		{"a script's error reply", answered("ERR bad plan"), true},
		{"an unknown command", func() error { return rdb.Do(ctx, "NOSUCHCOMMAND").Err() }, true},
		{"a conversation held for a rebuild", answered(refusalHeld + " P{c:g}:held is set"), true},
		{"keys of different slots", answered("CROSSSLOT Keys in request don't hash to the same slot"), true},
		{"a malformed reply", func() error { return fmt.Errorf("inbox c of u: %w: 2 replies for 3 updates", ErrMalformedReply) }, true},
		{"no such server", func() error { return down.Ping(ctx).Err() }, false},
		{"a closed client", func() error { return closed.Ping(ctx).Err() }, false},
		{"a call past its deadline", func() error {
			short, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
			defer cancel()
			return timed.BLPop(short, time.Second, prefix+"{u:x}:none").Err()
		}, false},
		{"a cancelled call", func() error {
			gone, cancel := context.WithCancel(ctx)
			cancel()
			return rdb.Ping(gone).Err()
		}, false},
		{"no free connection in the pool", func() error { return fmt.Errorf("apply: %w", redis.ErrPoolTimeout) }, false},
		{"a connection cut mid-reply", func() error { return fmt.Errorf("read: %w", io.ErrUnexpectedEOF) }, false},
		{"a server loading its data", answered("LOADING Redis is loading the dataset in memory"), false},
		{"a server busy with a script", answered("BUSY Redis is busy running a script. You can only call SCRIPT KILL or SHUTDOWN NOSAVE."), false},
		{"a slot migrating", answered("TRYAGAIN Multiple keys request during rehashing of slot"), false},
		{"a cluster down", answered("CLUSTERDOWN The cluster is down"), false},
		{"a replica without its master", answered("MASTERDOWN Link with MASTER is down and replica-serve-stale-data is set to 'no'."), false},
		{"a replica", answered("READONLY You can't write against a read only replica."), false},
		{"too few replicas", answered("NOREPLICAS Not enough good replicas to write."), false},
		{"a server out of memory", answered("OOM command not allowed when used memory > 'maxmemory'."), false},
		{"a script's command out of memory", answered(
			"OOM command not allowed when used memory > 'maxmemory'. script: 0afd6381b7bc7e087629b058a114888865e2f312, on @user_script:1."), false},
		{"an older server's script out of memory", answered(
			"ERR Error running script (call to f_0afd6381): @user_script:1: @user_script: 1: -OOM command not allowed when used memory > 'maxmemory'."), false},
		{"a server that cannot save", answered("MISCONF Redis is configured to save RDB snapshots, but it's currently unable to persist to disk."), false},
		{"a server at its client limit", answered("ERR max number of clients reached"), false},
		{"a killed script", answered("ERR Script killed by user with SCRIPT KILL..."), false},
		{"a lost script cache", func() error { return rdb.EvalSha(ctx, "0000000000000000000000000000000000000000", nil).Err() }, false},
		{"an instance not verified", func() error { return fenced(answered(refusalFenced + " run_id abc")()) }, false},
		{"a user being moved", func() error { return fmt.Errorf("inbox c of u: %w", ErrUserMoved) }, false},
		{"a user moved, as the script answers it", answered(refusalMoved + " user moved"), false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.err()
			if err == nil {
				t.Fatal("no error: the case proves nothing")
			}
			if got := Permanent(err); got != tc.permanent {
				t.Fatalf("Permanent(%q) = %v, want %v", err, got, tc.permanent)
			}
		})
	}
	for _, err := range []error{nil, redis.Nil} {
		if Permanent(err) {
			t.Fatalf("Permanent(%v) = true; it is no failure", err)
		}
	}
	if !errors.Is(fenced(answered(refusalFenced+" run_id abc")()), ErrFenced) {
		t.Fatal("the fence's refusal is not ErrFenced")
	}
}
