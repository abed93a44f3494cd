package main

import "github.com/offlinebox/offlinebox/bench/internal/harness"

// proc is one child process of the cluster: a production binary, the
// broker process, the balancer; kind says which role it plays.
type proc struct {
	kind string
	*harness.Proc
}

func newProc(kind, name, logDir, bin string, args ...string) *proc {
	return &proc{kind: kind, Proc: harness.NewProc(name, logDir, bin, args...)}
}
