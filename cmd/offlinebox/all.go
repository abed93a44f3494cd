package main

import (
	"context"
	"io"
	"log/slog"
	"net"

	"github.com/offlinebox/offlinebox/web"
)

// runAll runs every worker and the API in this process.
func runAll(ctx context.Context, args []string, _ io.Writer) error {
	c, err := parseServer("all", args, true)
	if err != nil {
		return err
	}
	return runPipeline(ctx, c, nil)
}

// runPipeline opens the stores, migrates, and runs every worker and the API
// until ctx ends. ready, when not nil, is called once the API listens.
func runPipeline(ctx context.Context, c *stackConfig, ready func(net.Addr)) error {
	h, p, err := openPolicyServer(ctx, c, needs{redis: true, clickhouse: true, producer: true})
	if err != nil {
		return err
	}
	defer p.close()
	if err := ensureTopics(ctx, c); err != nil {
		return err
	}
	if err := p.ch.Migrate(ctx); err != nil {
		return err
	}
	fan, closeFanout, err := p.fanoutWorker()
	if err != nil {
		return err
	}
	defer closeFanout()
	idx, err := p.convindexWorker()
	if err != nil {
		return err
	}
	hist, err := p.historyWorker()
	if err != nil {
		return err
	}
	pushers, err := p.pushWorkers()
	if err != nil {
		return err
	}
	expirers, err := p.expiryWorkers()
	if err != nil {
		return err
	}
	srv, err := p.apiServer(c.JWTSecret, h)
	if err != nil {
		return err
	}
	defer srv.Close()
	cw, err := p.censusWorker()
	if err != nil {
		return err
	}
	tasks := workerTasks(c, h, append([]workerSpec{fan, idx, hist}, pushers...))
	p.addStoreChecks(h)
	h.storesOpened()
	tasks = append(tasks, func(ctx context.Context) error {
		ln, err := listen(c.Listen)
		if err != nil {
			return err
		}
		slog.Info("api listening", "addr", ln.Addr().String())
		if ready != nil {
			ready(ln.Addr())
		}
		return serveListener(ctx, ln, web.Handler(srv.Handler()))
	})
	tasks = append(tasks, cw.Run, p.watchPolicies)
	for _, e := range expirers {
		tasks = append(tasks, e.Run)
	}
	return runTogether(ctx, tasks...)
}
