package main

import (
	"fmt"

	"github.com/offlinebox/offlinebox/bench/internal/harness"
)

// scriptCost is one script's share of a phase, per message.
type scriptCost struct {
	CallsPerMessage float64 `json:"calls_per_message"`
	USPerMessage    float64 `json:"us_per_message"`
	USPerCall       float64 `json:"us_per_call"`
}

// phaseResult is one kind of message through one tree's fanout.
type phaseResult struct {
	Kind           string  `json:"kind"`
	Messages       int64   `json:"messages"`
	BusyMS         float64 `json:"busy_ms"`
	MessagesPerSec float64 `json:"messages_per_sec"`
	// RedisScriptUSPerMessage: µs inside Redis in script calls
	// (commandstats evalsha, eval, fcall), per message: sequencing and
	// inbox scripts together.
	RedisScriptUSPerMessage float64 `json:"redis_script_us_per_message"`
	// RedisAllUSPerMessage: every command's µs, per message.
	RedisAllUSPerMessage float64 `json:"redis_all_us_per_message"`
	// Scripts splits the script time by script (from the slowlog);
	// ScriptsComplete is false when the slowlog overflowed.
	Scripts         map[string]scriptCost `json:"scripts"`
	ScriptsComplete bool                  `json:"scripts_complete"`
	// Commands: every command Redis ran (the scripts' own commands
	// among them), per message: where a script's time goes.
	Commands              map[string]scriptCost `json:"redis_commands"`
	FanoutCPUMSPerMessage float64               `json:"fanout_cpu_ms_per_message"`
	FailedHandleCalls     int64                 `json:"failed_handle_calls"`
	// BadSeqs: conversations whose seq is not one per record.
	BadSeqs int `json:"bad_seqs"`
	cpuMS   float64
	scripts float64
}

// sideResult is every phase through one tree's fanout, and the mix's
// totals.
type sideResult struct {
	Phases                  []phaseResult `json:"phases"`
	MessagesPerSec          float64       `json:"messages_per_sec"`
	RedisUSPerDirectMessage float64       `json:"redis_us_per_direct_message"`
	RedisUSPerGroupMessage  float64       `json:"redis_us_per_group_message"`
	FanoutCPUMSPerMessage   float64       `json:"fanout_cpu_ms_per_message"`
}

type result struct {
	Benchmark  string          `json:"benchmark"`
	Scale      float64         `json:"scale"`
	Machine    harness.Machine `json:"machine"`
	Bodies     string          `json:"bodies"`
	Partitions int             `json:"partitions"`
	Messages   int             `json:"messages"`
	sideResult
	Baseline       string        `json:"baseline,omitempty"`
	BaselineResult *sideResult   `json:"baseline_result,omitempty"`
	Embedded       []string      `json:"embedded"`
	Table          []harness.Row `json:"table"`
	Notes          []string      `json:"notes"`
}

func phaseOf(p *phase, cr childResult, before, after map[string][2]float64, split map[string][2]float64, complete bool, bad int) phaseResult {
	n := float64(len(p.msgs))
	scripts, all := scriptUsec(before, after)
	pr := phaseResult{Kind: p.name, Messages: int64(len(p.msgs)), BusyMS: harness.Round(cr.BusyMS, 1),
		MessagesPerSec:          harness.Round(harness.Ratio(n, cr.BusyMS/1000), 0),
		RedisScriptUSPerMessage: harness.Round(scripts/n, 2), RedisAllUSPerMessage: harness.Round(all/n, 2),
		Scripts: map[string]scriptCost{}, ScriptsComplete: complete,
		FanoutCPUMSPerMessage: harness.Round(cr.CPUMS/n, 4), FailedHandleCalls: cr.Failed, BadSeqs: bad,
		cpuMS: cr.CPUMS, scripts: scripts}
	pr.Commands = map[string]scriptCost{}
	for name, a := range after {
		calls, us := a[0]-before[name][0], a[1]-before[name][1]
		if calls > 0 {
			pr.Commands[name] = scriptCost{CallsPerMessage: harness.Round(calls/n, 3), USPerMessage: harness.Round(us/n, 2),
				USPerCall: harness.Round(us/calls, 2)}
		}
	}
	for name, v := range split {
		pr.Scripts[name] = scriptCost{CallsPerMessage: harness.Round(v[0]/n, 3), USPerMessage: harness.Round(v[1]/n, 2),
			USPerCall: harness.Round(harness.Ratio(v[1], v[0]), 1)}
	}
	return pr
}

// totals sums the phases: the mix's rate and CPU, and Redis's script time
// per direct and per group message (groups of both sizes, as the mix has
// them).
func (s *sideResult) totals() {
	var n, busy, cpu, gn, gus float64
	for _, p := range s.Phases {
		n += float64(p.Messages)
		busy += p.BusyMS
		cpu += p.cpuMS
		if p.Kind == "direct" {
			s.RedisUSPerDirectMessage = p.RedisScriptUSPerMessage
		} else {
			gn += float64(p.Messages)
			gus += p.scripts
		}
	}
	s.MessagesPerSec = harness.Round(harness.Ratio(n, busy/1000), 0)
	s.FanoutCPUMSPerMessage = harness.Round(harness.Ratio(cpu, n), 4)
	s.RedisUSPerGroupMessage = harness.Round(harness.Ratio(gus, gn), 2)
}

func (r *result) fill(s *sideResult) {
	s.totals()
	r.sideResult = *s
}

func notes() []string {
	return []string{
		"each kind of message is a phase: its records are produced to im.messages once, then drained by ours and " +
			"by the baseline, each a fanout process of its own (its own consumer group and key prefix) on the same " +
			"Redis and kfake, in turn, the order swapped each phase; groups are founded by their joins first (not timed)",
		"redis_script_us_per_message: INFO commandstats usec of evalsha/eval/fcall over the drain, per message " +
			"(sequencing and inbox scripts together); scripts: the same time split by script from the slowlog " +
			"(every command logged), a script named by its first key (sequence: the conversation's meta; inbox: a " +
			"user's inbox)",
		"messages_per_sec: messages / the fanout's busy time (first Handle to the last); fanout_cpu_ms_per_message: " +
			"the fanout process's user+system CPU from its start to its last record, per message",
		"redis_us_per_group_message: groups of 3-50 and of 500 together, weighted as the mix has them",
	}
}

func printTable(r *result) []harness.Row {
	b := func(f func(*sideResult) string) string {
		if r.BaselineResult == nil {
			return ""
		}
		return f(r.BaselineResult)
	}
	us := func(v func(*sideResult) float64) func(*sideResult) string {
		return func(s *sideResult) string { return fmt.Sprintf("%.1f µs", v(s)) }
	}
	direct := us(func(s *sideResult) float64 { return s.RedisUSPerDirectMessage })
	group := us(func(s *sideResult) float64 { return s.RedisUSPerGroupMessage })
	rate := func(s *sideResult) string { return fmt.Sprintf("%.0f", s.MessagesPerSec) }
	cpu := func(s *sideResult) string { return fmt.Sprintf("%.3f ms", s.FanoutCPUMSPerMessage) }
	ours := &r.sideResult
	rows := []harness.Row{
		harness.Info("messages/s (the mix)", rate(ours), b(rate)),
		harness.Check("Redis script µs per direct message", direct(ours), b(direct), "<= 30 µs", ours.RedisUSPerDirectMessage <= 30),
		harness.Check("Redis script µs per group message", group(ours), b(group), "<= 50 µs", ours.RedisUSPerGroupMessage <= 50),
		harness.Info("fanout CPU per message", cpu(ours), b(cpu)),
	}
	for i, p := range ours.Phases {
		for _, name := range []string{"sequence", "inbox"} {
			f := func(s *sideResult) string {
				if i >= len(s.Phases) {
					return ""
				}
				c := s.Phases[i].Scripts[name]
				return fmt.Sprintf("%.1f µs (%.2f calls)", c.USPerMessage, c.CallsPerMessage)
			}
			rows = append(rows, harness.Info(p.Kind+": "+name+" script per message", f(ours), b(f)))
		}
		bad := func(s *sideResult) string { return fmt.Sprint(s.Phases[min(i, len(s.Phases)-1)].BadSeqs) }
		rows = append(rows, harness.Check(p.Kind+": conversations with a wrong seq", bad(ours), b(bad), "0", p.BadSeqs == 0))
	}
	title := fmt.Sprintf("write: %d messages, 70%% direct, 25%% groups of 3-50, 5%% groups of 500 (scale %g)", r.Messages, r.Scale)
	if r.Baseline != "" {
		title += ", baseline " + r.Baseline + " in the same run"
	}
	harness.PrintTable(title, rows)
	return rows
}
