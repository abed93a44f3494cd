package main

import (
	"context"
	"sort"
	"strings"

	"github.com/redis/go-redis/v9"

	"github.com/offlinebox/offlinebox/bench/internal/harness"
)

// redisCommand is one command's share of redis-server's time in a phase
// (INFO commandstats after CONFIG RESETSTAT at the phase's start). The
// commands a script runs are counted under their own names as well as
// in the script's call, so the rows overlap.
type redisCommand struct {
	Command string  `json:"command"`
	Calls   int64   `json:"calls"`
	MS      float64 `json:"ms"`
}

// resetCommandStats starts a phase's command accounting.
func resetCommandStats(ctx context.Context, rdb *redis.Client) {
	_ = rdb.ConfigResetStat(ctx).Err()
}

// commandStats reads the commands that took the most time since the
// last reset, most first (at most n).
func commandStats(ctx context.Context, rdb *redis.Client, n int) []redisCommand {
	info, err := rdb.Info(ctx, "commandstats").Result()
	if err != nil {
		return nil
	}
	var out []redisCommand
	for _, l := range strings.Split(info, "\n") {
		if name, st, ok := harness.ParseCommandStat(l); ok {
			out = append(out, redisCommand{Command: name, Calls: st.Calls, MS: float64(st.Usec) / 1000})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].MS > out[j].MS })
	return out[:min(n, len(out))]
}
