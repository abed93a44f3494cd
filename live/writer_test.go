package live

import (
	"io"
	"net"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// delayHub is a hub and one corked connection over a pipe whose other
// end reads want bytes.
func delayHub(t *testing.T, delay time.Duration, want int) (*liveHub, *liveConn, *countingConn, chan []byte) {
	t.Helper()
	m, err := newLiveMetrics(prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	h := &liveHub{cfg: Config{MaxQueueBytes: 1 << 20, WriteTimeout: 5 * time.Second, WriteDelay: delay}, metrics: m,
		withPend: newPendingSet()}
	server, client := net.Pipe()
	t.Cleanup(func() { client.Close() })
	counted := &countingConn{Conn: server}
	c := newLiveConn(h, nil, "bob", "phone", "c1")
	c.cork = newCorkConn(counted, 5*time.Second)
	c.start()
	got := make(chan []byte, 1)
	go func() {
		buf := make([]byte, want)
		_, _ = io.ReadFull(client, buf)
		got <- buf
	}()
	return h, c, counted, got
}

func TestFramesOfBatchesWithinTheWriteDelayShareOneWrite(t *testing.T) {
	frames := [][]byte{[]byte(`{"type":"a"}`), []byte(`{"type":"bb"}`)}
	h, c, counted, got := delayHub(t, 50*time.Millisecond, 2*2+len(frames[0])+len(frames[1]))
	wd := newWriteDelay(h)
	start := time.Now()
	for _, f := range frames { // two bus batches, one frame each
		h.writes.begin()
		c.send(f, false)
		wd.dispatched()
	}
	if n := counted.writes.Load(); n != 0 {
		t.Fatalf("%d writes within the delay, want none", n)
	}
	select {
	case <-wd.C():
		wd.expired()
	case <-time.After(5 * time.Second):
		t.Fatal("the write delay never ended")
	}
	if waited := time.Since(start); waited < 40*time.Millisecond {
		t.Fatalf("the delay ended after %s, want about 50ms", waited)
	}
	select {
	case buf := <-got:
		if buf[0] != wsFinText || int(buf[1]) != len(frames[0]) || buf[2+len(frames[0])] != wsFinText {
			t.Fatalf("not two text frames, one message each: % x", buf)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the delayed frames were never written")
	}
	if n := counted.writes.Load(); n != 1 {
		t.Fatalf("two batches' frames took %d writes, want one", n)
	}
	if wd.C() != nil {
		t.Fatal("a delay still runs after it was written")
	}
}

func TestANegativeWriteDelayWritesEachBatchAtOnce(t *testing.T) {
	frame := []byte(`{"type":"a"}`)
	h, c, counted, got := delayHub(t, -1, 2+len(frame))
	wd := newWriteDelay(h)
	h.writes.begin()
	c.send(frame, false)
	wd.dispatched()
	select {
	case <-got:
	case <-time.After(5 * time.Second):
		t.Fatal("the frame was not written when its batch was handed out")
	}
	if n := counted.writes.Load(); n != 1 {
		t.Fatalf("%d writes, want one", n)
	}
	if wd.C() != nil {
		t.Fatal("a delay runs though none is configured")
	}
}

func TestWriteDelayAboveItsBoundIsRefused(t *testing.T) {
	if err := (Config{WriteDelay: maxLiveWriteDelay + time.Millisecond}).Validate(); err == nil {
		t.Fatal("a write delay above the bound was accepted")
	}
	if err := (Config{WriteDelay: -1}).Validate(); err != nil {
		t.Fatalf("no delay refused: %v", err)
	}
}
