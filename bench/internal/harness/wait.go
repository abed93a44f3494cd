package harness

import (
	"context"
	"fmt"
	"net/http"
	"time"
)

// Every calls do every interval until ctx ends; a call that runs long
// delays the next rather than overlapping it.
func Every(ctx context.Context, interval time.Duration, do func()) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		do()
	}
}

// Sleep waits d, or returns ctx's error as soon as it ends.
func Sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// WaitOK polls url every 100 ms until it answers 200 (a server's health
// or readiness endpoint), for at most within or until ctx ends.
func WaitOK(ctx context.Context, url string, within time.Duration) error {
	cl := &http.Client{Timeout: 2 * time.Second}
	deadline := time.Now().Add(within)
	for time.Now().Before(deadline) {
		resp, err := cl.Get(url)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		if err := Sleep(ctx, 100*time.Millisecond); err != nil {
			return err
		}
	}
	return fmt.Errorf("%s did not answer 200 within %s", url, within)
}
