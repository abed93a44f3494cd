package main

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/redis/go-redis/v9"
)

// scriptCommands are the commandstats entries a script call shows as.
var scriptCommands = []string{"evalsha", "eval", "fcall", "fcall_ro"}

// commandUsec reads INFO commandstats: per command, calls and µs spent.
func commandUsec(ctx context.Context, rdb *redis.Client) (map[string][2]float64, error) {
	info, err := rdb.Info(ctx, "commandstats").Result()
	if err != nil {
		return nil, fmt.Errorf("INFO commandstats: %w", err)
	}
	out := map[string][2]float64{}
	for _, line := range strings.Split(info, "\n") {
		name, rest, ok := strings.Cut(strings.TrimSpace(line), ":")
		name, isCmd := strings.CutPrefix(name, "cmdstat_")
		if !ok || !isCmd {
			continue
		}
		var v [2]float64
		for _, kv := range strings.Split(rest, ",") {
			k, val, _ := strings.Cut(kv, "=")
			f, _ := strconv.ParseFloat(val, 64)
			switch k {
			case "calls":
				v[0] = f
			case "usec":
				v[1] = f
			}
		}
		out[name] = v
	}
	return out, nil
}

// scriptUsec sums the µs of script calls (and of all commands) between
// two commandstats readings.
func scriptUsec(before, after map[string][2]float64) (scripts, all float64) {
	for name, a := range after {
		d := a[1] - before[name][1]
		all += d
		for _, s := range scriptCommands {
			if name == s {
				scripts += d
			}
		}
	}
	return scripts, all
}

// startSlowlog makes Redis log every command with its duration, so that
// script calls can be told apart by the keys they name.
func startSlowlog(ctx context.Context, rdb *redis.Client, entries int) error {
	if err := rdb.ConfigSet(ctx, "slowlog-log-slower-than", "0").Err(); err != nil {
		return fmt.Errorf("slowlog on: %w", err)
	}
	if err := rdb.ConfigSet(ctx, "slowlog-max-len", strconv.Itoa(entries)).Err(); err != nil {
		return fmt.Errorf("slowlog length: %w", err)
	}
	return rdb.Do(ctx, "SLOWLOG", "RESET").Err()
}

// scriptSplit reads the slowlog: per script (named by its first key's
// kind: sequence for a conversation's meta, inbox for a user's inbox),
// calls and µs. complete is false when the log overflowed.
func scriptSplit(ctx context.Context, rdb *redis.Client, entries int) (map[string][2]float64, bool, error) {
	logs, err := rdb.SlowLogGet(ctx, -1).Result()
	if err != nil {
		return nil, false, fmt.Errorf("SLOWLOG GET: %w", err)
	}
	if err := rdb.ConfigSet(ctx, "slowlog-log-slower-than", "10000").Err(); err != nil {
		return nil, false, fmt.Errorf("slowlog off: %w", err)
	}
	out := map[string][2]float64{}
	for _, l := range logs {
		if len(l.Args) < 4 {
			continue
		}
		cmd := strings.ToLower(l.Args[0])
		if cmd != "evalsha" && cmd != "eval" && cmd != "fcall" {
			continue
		}
		name := scriptOf(l.Args[3])
		v := out[name]
		v[0]++
		v[1] += float64(l.Duration.Microseconds())
		out[name] = v
	}
	return out, len(logs) < entries, nil
}

// scriptOf names a script call by the kind of its first key.
func scriptOf(key string) string {
	switch i := strings.LastIndexByte(key, ':'); {
	case i < 0:
		return "other"
	case key[i+1:] == "meta":
		return "sequence"
	case key[i+1:] == "ib":
		return "inbox"
	default:
		return "other (" + key[i+1:] + ")"
	}
}
