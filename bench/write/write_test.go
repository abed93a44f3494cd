package main

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/offlinebox/offlinebox/bench/internal/harness"
)

// TestMain lets the test binary serve as the fanout child, as the
// program does.
func TestMain(m *testing.M) {
	if os.Getenv(childEnv) != "" {
		if err := runChild(); err != nil {
			os.Stderr.WriteString("write fanout child: " + err.Error() + "\n")
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// TestShortRunSequencesEveryKindAndAccountsRedisTimeByScript runs the mix
// small, on loopback servers of its own: every conversation ends at one
// seq per record, and each kind's Redis time is in script calls, split
// into sequencing and inbox calls.
func TestShortRunSequencesEveryKindAndAccountsRedisTimeByScript(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	f := &harness.Flags{Scale: harness.ScaleSmall, Prefix: "bwtest:", Seed: 7}
	res, err := run(ctx, f, options{messages: 200, partitions: 2})
	if err != nil {
		if strings.Contains(err.Error(), "executable file not found") {
			t.Skipf("embedded servers: %v", err)
		}
		t.Fatal(err)
	}
	if len(res.Phases) != 3 {
		t.Fatalf("phases: got %d, want direct, group and large", len(res.Phases))
	}
	for _, p := range res.Phases {
		if p.BadSeqs != 0 {
			t.Errorf("%s: %d conversations with a wrong seq", p.Kind, p.BadSeqs)
		}
		if p.RedisScriptUSPerMessage <= 0 || p.MessagesPerSec <= 0 || p.FanoutCPUMSPerMessage <= 0 {
			t.Errorf("%s: nothing measured: %+v", p.Kind, p)
		}
		for _, s := range []string{"sequence", "inbox"} {
			if p.Scripts[s].CallsPerMessage <= 0 {
				t.Errorf("%s: no %s script calls in the slowlog: %+v", p.Kind, s, p.Scripts)
			}
		}
		if !p.ScriptsComplete {
			t.Errorf("%s: the slowlog overflowed", p.Kind)
		}
	}
	if res.RedisUSPerDirectMessage <= 0 || res.RedisUSPerGroupMessage <= 0 {
		t.Errorf("per kind: direct %v, group %v µs", res.RedisUSPerDirectMessage, res.RedisUSPerGroupMessage)
	}
}
