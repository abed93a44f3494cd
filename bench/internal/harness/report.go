package harness

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"os/signal"
	"slices"
	"strings"
	"sync"
	"syscall"
	"text/tabwriter"
	"time"
)

// Log prints progress lines on stderr, each with the time since start.
type Log struct {
	start time.Time
	mu    sync.Mutex
	w     io.Writer
}

// NewLog starts the clock of a program's progress lines.
func NewLog() *Log { return &Log{start: time.Now(), w: os.Stderr} }

// Printf prints one progress line.
func (l *Log) Printf(format string, args ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	fmt.Fprintf(l.w, "[%7.1fs] %s\n", time.Since(l.start).Seconds(), fmt.Sprintf(format, args...))
}

// Percentile is the p-th percentile (0..100, nearest rank) of ds in
// milliseconds; 0 for no samples.
func Percentile(ds []time.Duration, p float64) float64 {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	rank := int(math.Ceil(p/100*float64(len(s)))) - 1
	rank = min(max(rank, 0), len(s)-1)
	return Millis(s[rank])
}

// Millis is d in milliseconds, rounded to microseconds.
func Millis(d time.Duration) float64 {
	return math.Round(float64(d)/1e3) / 1e3
}

// Round keeps n decimals.
func Round(v float64, n int) float64 {
	p := math.Pow(10, float64(n))
	return math.Round(v*p) / p
}

// Ratio is a/b, 0 when b is 0.
func Ratio(a, b float64) float64 {
	if b == 0 {
		return 0
	}
	return a / b
}

// Row is one line of the result table: what, ours, the baseline (empty when
// there is none), the target (empty when none) and whether it is met.
type Row struct {
	Metric   string `json:"metric"`
	Ours     string `json:"ours"`
	Baseline string `json:"baseline,omitempty"`
	Target   string `json:"target,omitempty"`
	// Met is "yes", "NO" or "" (no target).
	Met string `json:"met,omitempty"`
}

// Check builds a Row whose target is met when ok.
func Check(metric, ours, baseline, target string, ok bool) Row {
	met := "NO"
	if ok {
		met = "yes"
	}
	return Row{Metric: metric, Ours: ours, Baseline: baseline, Target: target, Met: met}
}

// Info builds a Row without a target.
func Info(metric, ours, baseline string) Row {
	return Row{Metric: metric, Ours: ours, Baseline: baseline}
}

// PrintTable writes the rows as an aligned table on stderr.
func PrintTable(title string, rows []Row) {
	fmt.Fprintf(os.Stderr, "\n%s\n%s\n", title, strings.Repeat("=", len(title)))
	tw := tabwriter.NewWriter(os.Stderr, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "metric\tours\tbaseline\ttarget\tmet")
	for _, r := range rows {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", r.Metric, r.Ours, dash(r.Baseline), dash(r.Target), dash(r.Met))
	}
	_ = tw.Flush()
	fmt.Fprintln(os.Stderr)
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// EmitJSON prints v as one line on stdout when enabled; it is the last
// thing a program prints there.
func EmitJSON(enabled bool, v any) error {
	if !enabled {
		return nil
	}
	data, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("encode result: %w", err)
	}
	_, err = fmt.Fprintln(os.Stdout, string(data))
	return err
}

// Fail prints err on stderr and exits with status 1.
func Fail(name string, err error) {
	fmt.Fprintf(os.Stderr, "%s: %v\n", name, err)
	os.Exit(1)
}

// Run runs a benchmark's body until it returns or the process is
// interrupted (SIGINT, SIGTERM), and exits 1 with the error if it failed.
func Run(name string, body func(ctx context.Context) error) {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := body(ctx)
	stop()
	if err != nil {
		Fail(name, err)
	}
}

// RunOnStack runs a benchmark's body as Run does, over a stack of needs
// started first and stopped after it, so that every benchmark starts and
// stops its servers the same way.
func RunOnStack(name string, f *Flags, needs Needs, body func(ctx context.Context, log *Log, st *Stack) error) {
	Run(name, func(ctx context.Context) error {
		log := NewLog()
		st, err := StartStack(ctx, f, needs, log)
		if err != nil {
			return err
		}
		defer st.Stop()
		return body(ctx, log, st)
	})
}

// AsChild runs run and reports true when the process was started as a
// benchmark's child (env is set): a failed child says so on stderr as what
// and exits 1, so that its parent sees the reason in the child's output.
func AsChild(env, what string, run func() error) bool {
	if os.Getenv(env) == "" {
		return false
	}
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, what+":", err)
		os.Exit(1)
	}
	return true
}

// Header opens every benchmark's result file: which benchmark ran, at
// what scale, on which machine, with which bodies. Embedded first in a
// result, its fields stay the file's first keys.
type Header struct {
	Benchmark string  `json:"benchmark"`
	Scale     float64 `json:"scale"`
	Machine   Machine `json:"machine"`
	Bodies    string  `json:"bodies"`
}

// NewHeader is the header of benchmark name run at scale on this machine.
func NewHeader(name string, scale float64) Header {
	return Header{Benchmark: name, Scale: scale, Machine: ThisMachine(), Bodies: BodyDescription}
}
