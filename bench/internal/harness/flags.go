package harness

import (
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// Scales every program knows by name; a number in (0, 1] works too.
const (
	// ScaleSmall is a quick run: well under a minute on two shared cores.
	ScaleSmall = 0.05
	// ScaleFull reproduces the founding numbers.
	ScaleFull = 1.0
)

// Flags are the options every benchmark program takes.
type Flags struct {
	// Scale multiplies the workload (message counts, users); 1 is the
	// founding scenario.
	Scale float64
	// JSON prints the result object on the last line of stdout.
	JSON bool
	// Redis, Kafka and ClickHouse are addresses of running servers; each
	// one left empty is started in Dir (embedded) and stopped on exit.
	Redis      string
	Kafka      string
	ClickHouse string
	// Dir holds the embedded servers' data (a fresh temporary folder when
	// empty; removed on exit unless Keep).
	Dir  string
	Keep bool
	// AOF runs the embedded redis-server with appendfsync everysec.
	AOF bool
	// Prefix starts every Redis key this run writes.
	Prefix string
	// Seed makes generated workloads repeatable.
	Seed int64
}

// scaleValue parses --scale: small, full or a number in (0, 1].
type scaleValue struct{ v *float64 }

// ScaleFlag is the --scale flag's parser over v, for programs that bind
// their own flags.
func ScaleFlag(v *float64) flag.Value { return scaleValue{v} }

func (s scaleValue) String() string {
	if s.v == nil {
		return ""
	}
	return strconv.FormatFloat(*s.v, 'g', -1, 64)
}

func (s scaleValue) Set(text string) error {
	switch strings.ToLower(text) {
	case "small", "quick":
		*s.v = ScaleSmall
		return nil
	case "full":
		*s.v = ScaleFull
		return nil
	}
	f, err := strconv.ParseFloat(text, 64)
	if err != nil || f <= 0 || f > 1 {
		return fmt.Errorf("scale %q is not small, full or a number in (0, 1]", text)
	}
	*s.v = f
	return nil
}

// Bind registers the common flags on fs; defScale is the program's default.
func (f *Flags) Bind(fs *flag.FlagSet, defScale float64) {
	f.Scale = defScale
	fs.Var(scaleValue{&f.Scale}, "scale", "workload size: small (quick run), full (founding numbers) or a number in (0, 1]")
	fs.BoolVar(&f.JSON, "json", false, "print one JSON object with the results on the last line of stdout")
	fs.StringVar(&f.Redis, "redis", "", "address of a running redis-server (127.0.0.1:port); empty starts one")
	fs.StringVar(&f.Kafka, "kafka", "", "seed broker of a running Kafka; empty starts kfake in-process")
	fs.StringVar(&f.ClickHouse, "clickhouse", "", "native address of a running clickhouse-server; empty starts one")
	fs.StringVar(&f.Dir, "dir", "", "folder for the embedded servers' data (default: a temporary folder)")
	fs.BoolVar(&f.Keep, "keep", false, "keep the embedded servers' data folder")
	fs.BoolVar(&f.AOF, "aof", false, "embedded redis-server with the append-only file (fsync every second)")
	fs.StringVar(&f.Prefix, "prefix", "bench:", "Redis key prefix of this run")
	fs.Int64Var(&f.Seed, "seed", 1, "seed of the generated workload")
}

// Parse binds the common flags, lets extra add the program's own, and
// parses the command line. It exits with status 2 on bad flags.
func Parse(name string, defScale float64, extra func(fs *flag.FlagSet)) *Flags {
	fs := flag.NewFlagSet(name, flag.ExitOnError)
	f := &Flags{}
	f.Bind(fs, defScale)
	if extra != nil {
		extra(fs)
	}
	_ = fs.Parse(os.Args[1:])
	if fs.NArg() > 0 {
		fmt.Fprintf(os.Stderr, "%s: unexpected arguments %v\n", name, fs.Args())
		os.Exit(2)
	}
	return f
}

// Scaled is n times the scale, at least lo.
func (f *Flags) Scaled(n int, lo int) int {
	return max(lo, int(float64(n)*f.Scale+0.5))
}

// Counts reads list, a flag's comma-separated whole numbers, each at least
// least; one that is not fails the benchmark, naming the flag and what
// the number should be.
func Counts(name, flagName, list string, least int, what string) []int {
	var out []int
	for _, s := range strings.Split(list, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || n < least {
			Fail(name, fmt.Errorf("-%s: %q is not %s", flagName, s, what))
		}
		out = append(out, n)
	}
	return out
}
