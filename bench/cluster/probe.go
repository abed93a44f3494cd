package main

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/offlinebox/offlinebox/auth"
	"github.com/offlinebox/offlinebox/bench/internal/harness"
	"github.com/offlinebox/offlinebox/client"
)

// probe measures, through the balancer, while the workload runs: how long
// a message sent by one user takes to be pushed to a live device of the
// other (push), and how long a device's first sync takes (first sync).
type probe struct {
	url     string
	keyring *auth.Keyring
	hc      *http.Client
	mu      sync.Mutex
	push    []time.Duration
	sync    []time.Duration
	errs    int
	n       int
}

func newProbe(url string, k *auth.Keyring) *probe {
	return &probe{url: url, keyring: k, hc: &http.Client{Timeout: 10 * time.Second}}
}

// run probes every interval until ctx ends.
func (p *probe) run(ctx context.Context, interval time.Duration) {
	harness.Every(ctx, interval, func() {
		p.n++
		pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		err := p.once(pctx, p.n)
		cancel()
		if err != nil && ctx.Err() == nil {
			p.mu.Lock()
			p.errs++
			p.mu.Unlock()
		}
	})
}

func (p *probe) client(user, device string) (*client.Client, error) {
	tok, err := p.keyring.Mint(user, device, time.Hour)
	if err != nil {
		return nil, err
	}
	return client.New(p.url, tok, p.hc), nil
}

// once: a fresh device of a new user does its first sync, then connects
// live; a peer sends it a direct message; the time to the push counts.
func (p *probe) once(ctx context.Context, n int) error {
	to, from := fmt.Sprintf("probe-b-%d", n), fmt.Sprintf("probe-a-%d", n)
	rcv, err := p.client(to, "d1")
	if err != nil {
		return err
	}
	snd, err := p.client(from, "d1")
	if err != nil {
		return err
	}
	start := time.Now()
	if _, _, err := rcv.Sync(ctx, client.SyncRequest{}); err != nil {
		return err
	}
	p.note(&p.sync, time.Since(start))
	l, err := rcv.DialLive(ctx, client.LiveOptions{Buffer: 16})
	if err != nil {
		return err
	}
	defer l.CloseNow()
	sent := time.Now()
	if err := snd.Send(ctx, client.Outgoing{ClientMsgID: fmt.Sprintf("probe-%d", n), ConvID: fmt.Sprintf("probe-dm-%d", n),
		ConvType: "direct", Recipients: []string{to}, Body: []byte("probe")}); err != nil {
		return err
	}
	for {
		f, err := l.Next(ctx)
		if err != nil {
			return err
		}
		if f.Type == "message" && f.Message != nil {
			p.note(&p.push, time.Since(sent))
			return nil
		}
	}
}

func (p *probe) note(into *[]time.Duration, d time.Duration) {
	p.mu.Lock()
	*into = append(*into, d)
	p.mu.Unlock()
}

// quantile q (0..1) of the samples in milliseconds (0 without samples).
func quantile(ds []time.Duration, q float64) float64 {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	i := min(len(s)-1, max(0, int(float64(len(s))*q+0.999999)-1))
	return float64(s[i].Microseconds()) / 1000
}

// latencies are the probe's figures.
type latencies struct {
	pushP50, pushP99, syncP50, syncP99 float64
	samples, errs                      int
}

func (p *probe) result() latencies {
	p.mu.Lock()
	defer p.mu.Unlock()
	return latencies{pushP50: quantile(p.push, 0.5), pushP99: quantile(p.push, 0.99), syncP50: quantile(p.sync, 0.5),
		syncP99: quantile(p.sync, 0.99), samples: len(p.push), errs: p.errs}
}
