package main

import (
	"context"
	"fmt"
	"time"

	"github.com/offlinebox/offlinebox/bench/checker"
)

// result is one scenario's line of the JSON.
type result struct {
	Name  string `json:"name"`
	About string `json:"about"`
	Fault string `json:"fault"`
	// What producers sent (distinct stored records in im.messages) and
	// what every device stored, as the checker counts it.
	Sent int `json:"sent"`
	checker.Delivery
	Redelivered int `json:"redelivered"`
	// Traffic details.
	Records          int   `json:"records"`
	Resends          int   `json:"resends"`
	AtMostOnce       int   `json:"at_most_once"`
	Poison           int   `json:"poison"`
	DeadLetters      int   `json:"dead_letters"`
	DeadNoReason     int   `json:"dead_letters_without_reason"`
	APISent          int   `json:"api_sent"`
	APIResent        int   `json:"api_resent"`
	ProduceRetries   int64 `json:"produce_retries"`
	Devices          int   `json:"devices"`
	Syncs            int   `json:"syncs"`
	CrashBeforeStore int   `json:"crash_before_store"`
	CrashBeforeAck   int   `json:"crash_before_ack"`
	Overloaded       int   `json:"overloaded_503"`
	// Live scenarios: connections opened and dropped, pushes received.
	LiveSessions int `json:"live_sessions,omitempty"`
	LiveDrops    int `json:"live_drops,omitempty"`
	Pushed       int `json:"pushed,omitempty"`
	// Invariant checker on Redis after the scenario.
	VerifyOK       bool     `json:"verify_ok"`
	VerifyProblems []string `json:"verify_problems,omitempty"`
	// History store against the log.
	History   historyCheck `json:"history"`
	HistoryOK bool         `json:"history_ok"`
	// Seqs: no (conversation, epoch, seq) named two messages, in
	// im.sequenced or on any device.
	Seqs     seqCheck `json:"seqs"`
	SeqsOK   bool     `json:"seqs_ok"`
	OK       bool     `json:"ok"`
	Seconds  float64  `json:"seconds"`
	Error    string   `json:"error,omitempty"`
	Problems []string `json:"problems,omitempty"`
}

// runScenario brings up a system, plays a workload, breaks things while it
// flows, and checks everything after.
func (s *suite) runScenario(ctx context.Context, sc scenario) result {
	start := time.Now()
	res := result{Name: sc.name, About: sc.about}
	err := s.play(ctx, sc, &res)
	if err != nil {
		res.Error = err.Error()
	}
	res.Seconds = float64(time.Since(start).Milliseconds()) / 1000
	res.OK = err == nil && res.Lost == 0 && res.Duplicates == 0 && res.OutOfOrder == 0 && res.Unexpected == 0 &&
		res.VerifyOK && res.HistoryOK && res.SeqsOK && res.DeadLetters == res.Poison && res.DeadNoReason == 0
	return res
}

func (s *suite) play(ctx context.Context, sc scenario, res *result) error {
	wc, b := s.workloadConfig(sc.name)
	if sc.tune != nil {
		sc.tune(&wc, &b)
	}
	w, err := checker.Generate(wc)
	if err != nil {
		return err
	}
	s.workload = w
	e, err := newEnv(ctx, envOptions{name: sc.name, dir: s.dir, bin: s.bin, redisAddr: s.redis.Addr(),
		chAddr: s.ch.Addr(), fanouts: sc.fanouts, live: sc.live, logger: s.opts.logger})
	if err != nil {
		return err
	}
	defer e.stop()
	d := max(s.opts.duration, sc.minStream)
	run, err := checker.Start(ctx, checker.RunConfig{Workload: w, Brokers: e.brokers, APIURL: e.apiURL,
		Token: e.token, Duration: d, Behaviour: b, Drain: e.drain,
		Logf: func(f string, a ...any) { s.log.Printf(sc.name+": "+f, a...) }, LiveURLs: e.liveURLs,
		StreamProducerOpts: sc.streamOpts})
	if err != nil {
		return err
	}
	fault, ferr := sc.fault(ctx, s, e, run)
	res.Fault = fault
	rep, err := run.Finish(ctx)
	if ferr != nil {
		return fmt.Errorf("fault: %w", ferr)
	}
	if err != nil {
		return err
	}
	res.ProduceRetries = run.ProduceRetries()
	fill(res, rep, len(w.Devices))
	return s.after(ctx, e, rep, res)
}

// fill copies the checker's counts.
func fill(res *result, rep *checker.Report, devices int) {
	res.Sent, res.Delivery, res.Redelivered = rep.Sent, rep.Delivery, rep.Redelivered
	// Poison counts every record that must be dead-lettered: undecodable
	// ones and those the groups' authority refuses.
	res.Records, res.Resends, res.AtMostOnce, res.Poison = rep.Records, rep.Resends, rep.AtMostOnce, rep.Invalid+rep.Refused
	res.APISent, res.APIResent, res.Devices, res.Syncs = rep.APISent, rep.APIResent, devices, rep.Syncs
	res.CrashBeforeStore, res.CrashBeforeAck, res.Overloaded = rep.CrashBeforeStore, rep.CrashBeforeAck, rep.Overloaded
	res.Problems = rep.Problems
	res.LiveSessions, res.LiveDrops, res.Pushed = rep.LiveSessions, rep.LiveDrops, rep.Pushed
	if rep.NotInLog > 0 {
		res.Lost += rep.NotInLog
	}
}

// after runs verify, the history check and the dead-letter count.
func (s *suite) after(ctx context.Context, e *env, rep *checker.Report, res *result) error {
	vr, err := e.verifyStore(ctx)
	if err != nil {
		return fmt.Errorf("verify: %w", err)
	}
	res.VerifyOK = vr.OK()
	for i, p := range vr.Problems {
		if i == 20 {
			break
		}
		res.VerifyProblems = append(res.VerifyProblems, p.String())
	}
	if res.History, err = e.checkHistory(ctx, rep.MaxSeq); err != nil {
		return err
	}
	res.HistoryOK = res.History.ok()
	if res.Seqs, err = e.checkSeqs(ctx, rep.Placed); err != nil {
		return fmt.Errorf("seqs: %w", err)
	}
	res.SeqsOK = res.Seqs.ok()
	if res.DeadLetters, res.DeadNoReason, err = e.deadLetters(ctx); err != nil {
		return fmt.Errorf("dead letters: %w", err)
	}
	s.log.Printf("%s: sent %d, delivered %d of %d, lost %d, duplicates %d, out of order %d, verify ok %v, history missing %d, seqs reused %d (of %d in %d changelog records)",
		res.Name, res.Sent, res.Delivered, res.Expected, res.Lost, res.Duplicates, res.OutOfOrder, res.VerifyOK, res.History.Missing,
		res.Seqs.Reused+res.Seqs.Unlogged, res.Seqs.Places, res.Seqs.Records)
	return nil
}
