package harness

import (
	"strconv"
	"strings"
)

// CommandStat is one command's line of INFO commandstats: how often it
// was called and the µs redis-server spent in it since the last
// CONFIG RESETSTAT.
type CommandStat struct{ Calls, Usec int64 }

// ParseCommandStat reads one line of INFO commandstats
// ("cmdstat_get:calls=3,usec=10,..."); ok is false for any other line.
func ParseCommandStat(line string) (name string, st CommandStat, ok bool) {
	key, rest, found := strings.Cut(strings.TrimSpace(line), ":")
	name, isCmd := strings.CutPrefix(key, "cmdstat_")
	if !found || !isCmd {
		return "", CommandStat{}, false
	}
	for _, kv := range strings.Split(rest, ",") {
		k, v, _ := strings.Cut(kv, "=")
		switch k {
		case "calls":
			st.Calls, _ = strconv.ParseInt(v, 10, 64)
		case "usec":
			st.Usec, _ = strconv.ParseInt(v, 10, 64)
		}
	}
	return name, st, true
}
