package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"time"
)

// profilePhase fetches, when --profile-dir is set, each API process's CPU
// profile and allocation profile (a delta) over the next d, for a phase;
// the returned func waits for them to be written.
func (b *bench) profilePhase(ctx context.Context, phase string, d time.Duration) func() {
	if b.o.profileDir == "" {
		return func() {}
	}
	if err := os.MkdirAll(b.o.profileDir, 0o755); err != nil {
		b.log.Printf("profiles: %v", err)
		return func() {}
	}
	secs := max(int(d/time.Second), 1)
	var wg sync.WaitGroup
	for i, s := range b.servers {
		for _, kind := range []string{"profile", "allocs"} {
			name := fmt.Sprintf("%s-api%d.%s.pprof", phase, i, map[string]string{"profile": "cpu", "allocs": "allocs"}[kind])
			url := fmt.Sprintf("%s/debug/pprof/%s?seconds=%d", s.URL, kind, secs)
			wg.Add(1)
			go func() {
				defer wg.Done()
				if err := fetchTo(ctx, url, filepath.Join(b.o.profileDir, name), d+30*time.Second); err != nil {
					b.log.Printf("profile %s: %v", name, err)
				}
			}()
		}
	}
	return wg.Wait
}

func fetchTo(ctx context.Context, url, path string, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s: %s", url, resp.Status)
	}
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	return os.WriteFile(path, data, 0o644)
}
