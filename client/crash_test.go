package client

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"
)

// The crash child: the test binary run again with these variables set
// acts as the device, and kills itself with SIGKILL at the named step.
const (
	envChild     = "OFFLINEBOX_CLIENT_CRASH_CHILD"
	envChildBase = "OFFLINEBOX_CLIENT_CRASH_BASE"
	envChildDB   = "OFFLINEBOX_CLIENT_CRASH_DB"
	envChildStep = "OFFLINEBOX_CLIENT_CRASH_STEP" // "stored:3": at the third "stored"
)

// TestCrashChildProcess is the device of TestKilledDeviceEndsWithEveryMessageOnce;
// run alone it skips.
func TestCrashChildProcess(t *testing.T) {
	if os.Getenv(envChild) != "1" {
		t.Skip("runs only as the crash test's child")
	}
	var step string
	var at int
	if s := os.Getenv(envChildStep); s != "" {
		if _, err := fmt.Sscanf(s, "%s %d", &step, &at); err != nil {
			t.Fatalf("bad %s %q: %v", envChildStep, s, err)
		}
	}
	seen := 0
	o := Options{Base: os.Getenv(envChildBase), Token: testDeviceToken, Path: os.Getenv(envChildDB), Limit: 10, PageLimit: 8,
		Backoff: Backoff{Base: time.Millisecond, Max: 20 * time.Millisecond},
		step: func(s string) {
			if s != step {
				return
			}
			if seen++; seen == at {
				_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
				time.Sleep(time.Minute) // the signal is on its way
			}
		}}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	d, err := Open(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	rep, err := d.CatchUp(ctx)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Printf("caught up: %+v\n", rep)
}

// TestKilledDeviceEndsWithEveryMessageOnce kills a device process with
// SIGKILL 50 times during its catch-up over growing conversations: right
// after a store committed (before its ack), right after an ack (before
// the next store), after a gap page, and at random moments chosen from
// outside. Each restart continues from its database. At the end the
// database holds every message of every conversation exactly once, seqs
// 1..N in order, and every cursor is acked.
func TestKilledDeviceEndsWithEveryMessageOnce(t *testing.T) {
	if os.Getenv(envChild) == "1" {
		t.Skip("the child runs only TestCrashChildProcess")
	}
	const target, restarts = 700, 50
	convs := []string{"g-busy", "g-quiet", "d-peer"}
	f, srv := newFakeServer(t, target, 0, convs...)
	f.busyEach, f.limit, f.perAnswer = 13, 10, 1
	db := filepath.Join(t.TempDir(), "device.db")
	rng := rand.New(rand.NewPCG(1, uint64(time.Now().UnixNano())))
	steps := []string{"stored", "acked", "paged"}
	killed := map[string]int{}
	run := func(step string, after time.Duration) (bool, error) {
		cmd := exec.Command(os.Args[0], "-test.run=^TestCrashChildProcess$", "-test.count=1")
		cmd.Env = append(os.Environ(), envChild+"=1", envChildBase+"="+srv.URL, envChildDB+"="+db, envChildStep+"="+step)
		out, err := os.CreateTemp(t.TempDir(), "child")
		if err != nil {
			return false, err
		}
		cmd.Stdout, cmd.Stderr = out, out
		if err := cmd.Start(); err != nil {
			return false, err
		}
		if after > 0 {
			timer := time.AfterFunc(after, func() { _ = cmd.Process.Signal(syscall.SIGKILL) })
			defer timer.Stop()
		}
		err = cmd.Wait()
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() && ws.Signal() == syscall.SIGKILL {
				return true, nil
			}
			data, _ := os.ReadFile(out.Name())
			return false, fmt.Errorf("child failed: %v\n%s", err, data)
		}
		return false, err
	}
	for i := range restarts {
		f.add(rng.IntN(2 * target / restarts))
		var step string
		var after time.Duration
		if i%4 == 3 {
			after = time.Duration(5+rng.IntN(40)) * time.Millisecond
		} else {
			step = steps[rng.IntN(len(steps))] + " " + strconv.Itoa(1+rng.IntN(2))
		}
		wasKilled, err := run(step, after)
		if err != nil {
			t.Fatalf("run %d (%q, kill after %v): %v", i, step, after, err)
		}
		if wasKilled {
			killed[step[:min(len(step), 5)]+fmt.Sprint(after > 0)]++
		}
	}
	// The last runs are not killed: they finish what the others left.
	f.add(target)
	for range 2 {
		if _, err := run("", 0); err != nil {
			t.Fatalf("final run: %v", err)
		}
	}
	t.Logf("kills by step (name prefix, from outside): %v; syncs served %d", killed, f.syncs)
	total := 0
	for _, n := range killed {
		total += n
	}
	if total < restarts/2 {
		t.Errorf("only %d of %d runs were killed: the test did not exercise crashes", total, restarts)
	}

	ctx := context.Background()
	st, err := OpenStore(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, c := range convs {
		want := f.msgs[c]
		if len(want) != target {
			t.Fatalf("%s has %d messages on the server, want %d", c, len(want), target)
		}
		var got []Message
		rows, err := st.db.QueryContext(ctx, `SELECT seq, client_msg_id, body FROM messages WHERE conv_id = ? ORDER BY rowid`, c)
		if err != nil {
			t.Fatal(err)
		}
		for rows.Next() {
			var m Message
			if err := rows.Scan(&m.Seq, &m.ClientMsgID, &m.Body); err != nil {
				t.Fatal(err)
			}
			got = append(got, m)
		}
		rows.Close()
		if len(got) != len(want) {
			t.Errorf("%s: %d rows in the database, want %d", c, len(got), len(want))
		}
		bySeq := map[uint64]Message{}
		for _, m := range got {
			if _, dup := bySeq[m.Seq]; dup {
				t.Errorf("%s seq %d stored twice", c, m.Seq)
			}
			bySeq[m.Seq] = m
		}
		for _, w := range want {
			g, ok := bySeq[w.Seq]
			if !ok {
				t.Errorf("%s seq %d lost", c, w.Seq)
				continue
			}
			if g.ClientMsgID != w.ClientMsgID || string(g.Body) != string(w.Body) {
				t.Errorf("%s seq %d holds %s %q, want %s %q", c, w.Seq, g.ClientMsgID, g.Body, w.ClientMsgID, w.Body)
			}
		}
		held, err := st.Messages(ctx, c, 0, target+10)
		if err != nil {
			t.Fatal(err)
		}
		for i, m := range held {
			if m.Seq != uint64(i+1) {
				t.Fatalf("%s: message %d of the ordered read has seq %d", c, i, m.Seq)
			}
		}
		if f.acked[c] != target {
			t.Errorf("%s acked at %d on the server, want %d", c, f.acked[c], target)
		}
	}
	if gaps, _ := st.Gaps(ctx); len(gaps) != 0 {
		t.Errorf("gaps left after the last catch-up: %v", gaps)
	}
	if un, _ := st.Unacked(ctx); len(un) != 0 {
		t.Errorf("cursors stored but never acked: %v", un)
	}
}
