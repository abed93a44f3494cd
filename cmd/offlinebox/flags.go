package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
)

// helpOutput is where -h writes (a test reads it).
var helpOutput io.Writer = os.Stderr

// flagUse names a family of stack flags a subcommand reads.
type flagUse uint

const (
	useKafka      flagUse = 1 << iota // -kafka, -partitions
	useGroup                          // -session-timeout: a consumer group member
	useRedis                          // -redis, -redis-cluster, -hot-redis, -prefix
	useClickHouse                     // -clickhouse, -clickhouse-db, -clickhouse-user, -clickhouse-password
	useSealing                        // -key-file
	useAPI                            // -listen, -jwt-secret, -node
	useMetrics                        // -metrics-listen
	useRetention                      // -retention-policy
	useCensus                         // -drift-threshold
	useLiveBus                        // -live-bus-format: a live bus publisher

	useAll = ^flagUse(0)
	// useStores is what a process that opens Redis reads: a sealing store
	// keeps its data keys durable in ClickHouse too.
	useStores = useRedis | useClickHouse | useSealing
	useWorker = useKafka | useGroup | useMetrics
)

// flagFamily says which family each stack flag belongs to.
var flagFamily = map[string]flagUse{
	"kafka": useKafka, "partitions": useKafka, "session-timeout": useGroup,
	"redis": useRedis, "redis-cluster": useRedis, "hot-redis": useRedis, "prefix": useRedis,
	"clickhouse": useClickHouse, "clickhouse-db": useClickHouse, "clickhouse-user": useClickHouse,
	"clickhouse-password": useClickHouse, "key-file": useSealing,
	"listen": useAPI, "jwt-secret": useAPI, "node": useAPI, "metrics-listen": useMetrics,
	"retention-policy": useRetention, "drift-threshold": useCensus, "live-bus-format": useLiveBus,
}

// stackUses is, per subcommand (verbs of a group named "group verb"), the
// stack flags it reads; -h lists those and no others. A subcommand not
// named here gets every stack flag.
var stackUses = map[string]flagUse{
	"all":               useAll,
	"fanout":            useWorker | useStores,
	"convindex":         useWorker | useStores,
	"push":              useWorker | useStores | useLiveBus,
	"history":           useWorker | useClickHouse,
	"history sql":       useClickHouse,
	"expiry":            useStores | useMetrics | useRetention | useCensus,
	"api":               useKafka | useStores | useMetrics | useAPI | useLiveBus,
	"migrate":           useKafka | useClickHouse,
	"verify":            useStores,
	"rebuild":           useStores | useRetention,
	"keys add":          useSealing,
	"keys list":         useStores,
	"keys rekey":        useStores,
	"keys retire":       useStores,
	"repair-evicted":    useStores | useRetention,
	"revoke":            useRedis,
	"retention apply":   useStores | useRetention,
	"retention check":   useStores | useRetention,
	"retention explain": useStores | useRetention,
}

// usesFlag says whether subcommand name reads stack flag f.
func usesFlag(name, f string) bool {
	u, ok := stackUses[name]
	if !ok {
		u = useAll
	}
	fam, ok := flagFamily[f]
	return !ok || u&fam != 0
}

// newFlagSet is a subcommand's flag set: errors returned, -h written to
// helpOutput with a usage line and the flags it has.
func newFlagSet(name, synopsis string) *flag.FlagSet {
	fs := flag.NewFlagSet("offlinebox "+name, flag.ContinueOnError)
	fs.SetOutput(helpOutput)
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "usage: offlinebox %s %s\n", name, synopsis)
		if hasFlags(fs) {
			fmt.Fprintln(fs.Output(), "\nflags:")
			fs.PrintDefaults()
		}
	}
	return fs
}

func hasFlags(fs *flag.FlagSet) bool {
	n := 0
	fs.VisitAll(func(*flag.Flag) { n++ })
	return n > 0
}

// stackFlags registers on fs the stack flags subcommand name reads, bound
// to c, and returns the set holding all of them (for resolve).
func stackFlags(name string, c *stackConfig, fs *flag.FlagSet) *flag.FlagSet {
	all := flag.NewFlagSet(name, flag.ContinueOnError)
	c.bind(all)
	all.VisitAll(func(f *flag.Flag) {
		if usesFlag(name, f.Name) {
			fs.Var(f.Value, f.Name, f.Usage)
		}
	})
	return all
}

// verb is one command of a subcommand group (keys add, retention check).
type verb struct {
	name, summary string
	run           func(ctx context.Context, args []string, stdout io.Writer) error
}

// runVerbs runs the verb args name, or answers -h (exit 0) and a missing
// or unknown verb (an error) with the group's verbs.
func runVerbs(ctx context.Context, group string, verbs []verb, args []string, stdout io.Writer) error {
	list := func(w io.Writer) {
		fmt.Fprintf(w, "usage: offlinebox %s VERB [flags]\n\n", group)
		for _, v := range verbs {
			fmt.Fprintf(w, "  %-10s %s\n", v.name, v.summary)
		}
		fmt.Fprintf(w, "\nRun `offlinebox %s VERB -h` for its flags.\n", group)
	}
	if len(args) > 0 && isHelp(args[0]) {
		list(helpOutput)
		return flag.ErrHelp
	}
	var names []string
	for _, v := range verbs {
		if len(args) > 0 && v.name == args[0] {
			return v.run(ctx, args[1:], stdout)
		}
		names = append(names, v.name)
	}
	sort.Strings(names)
	if len(args) == 0 || strings.HasPrefix(args[0], "-") {
		var b strings.Builder
		list(&b)
		return errors.New("give a verb (" + strings.Join(names, ", ") + ")\n" + b.String())
	}
	return fmt.Errorf("unknown verb %q (%s)", args[0], strings.Join(names, ", "))
}

func isHelp(arg string) bool {
	return arg == "-h" || arg == "-help" || arg == "--help" || arg == "help"
}
