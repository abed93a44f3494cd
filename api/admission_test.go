package api

import (
	"bufio"
	"fmt"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/offlinebox/offlinebox/schemas"
)

// slowBody opens a connection that sends a sync request's headers and then
// its body one byte every 100 ms; the answer's status comes on the channel.
func slowBody(t *testing.T, e *env, token string) <-chan int {
	t.Helper()
	conn, err := net.Dial("tcp", strings.TrimPrefix(e.srv.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	fmt.Fprintf(conn, "POST /v1/sync HTTP/1.1\r\nHost: api\r\nAuthorization: Bearer %s\r\n"+
		"Content-Type: application/json\r\nContent-Length: 1000\r\n\r\n{", token)
	stop := make(chan struct{})
	t.Cleanup(func() { close(stop) })
	go func() {
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
				if _, err := conn.Write([]byte(" ")); err != nil {
					return
				}
			}
		}
	}()
	status := make(chan int, 1)
	go func() {
		resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
		if err != nil {
			status <- 0
			return
		}
		resp.Body.Close()
		status <- resp.StatusCode
	}()
	return status
}

func TestOneUsersSlowBodiesDoNotFailAnotherUsersRequest(t *testing.T) {
	const bodyTimeout = 2 * time.Second
	e := newEnv(t, envOptions{cfg: Config{MaxInFlight: 4, MaxPerUser: 8, BodyTimeout: bodyTimeout}})
	eve := e.token("eve", "eve-phone")
	start := time.Now()
	var slow []<-chan int
	for range 12 { // more than the in-flight slots, and than eve's share
		slow = append(slow, slowBody(t, e, eve))
	}
	time.Sleep(300 * time.Millisecond) // the server has every request's headers

	code, data := e.call("POST", "/v1/sync", e.token("bob", "bob-phone"), `{}`)
	if code != http.StatusOK {
		t.Fatalf("bob's sync while eve trickles bodies: %d %s, want 200", code, data)
	}
	if time.Since(start) >= bodyTimeout {
		t.Fatal("bob was answered after eve's bodies timed out; the test proves nothing")
	}
	got := map[int]int{}
	for _, st := range slow {
		select {
		case code := <-st:
			got[code]++
		case <-time.After(10 * time.Second):
			t.Fatal("one of eve's slow requests was never answered: the body timeout did not hold")
		}
	}
	// Eve's share is 8: those are read until the body timeout (408), the
	// others are refused at once, their bodies unread (429).
	if got[http.StatusRequestTimeout] != 8 || got[http.StatusTooManyRequests] != 4 {
		t.Fatalf("eve's slow requests ended with %v, want 8 × 408 and 4 × 429", got)
	}
}

func TestConfigValidateNamesTheAdmissionAndLimitFields(t *testing.T) {
	for _, tc := range []struct {
		cfg   Config
		field string
	}{
		{Config{MaxPerUser: -1}, "MaxPerUser"},
		{Config{MaxInFlight: 8, MaxAdmitted: 4}, "MaxAdmitted"},
		{Config{BodyTimeout: time.Millisecond}, "BodyTimeout"},
		{Config{QueueWait: -time.Second}, "QueueWait"},
		{Config{QueueWait: 20 * time.Second, RequestTimeout: 10 * time.Second}, "QueueWait"},
		{Config{Limits: schemas.Limits{Mentions: -1}}, "Mentions"},
		{Config{Limits: schemas.Limits{BodyBytes: 2 << 20, RecordBytes: 3 << 20}}, "Limits.BodyBytes"},
		{Config{Limits: schemas.Limits{BodyBytes: 2 << 10, RecordBytes: 1 << 10}}, "RecordBytes"},
	} {
		if err := tc.cfg.Validate(); err == nil || !strings.Contains(err.Error(), tc.field) {
			t.Errorf("Validate(%+v) = %v, want an error naming %s", tc.cfg, err, tc.field)
		}
	}
	if err := (Config{}).Validate(); err != nil {
		t.Errorf("the defaults do not validate: %v", err)
	}
}

func TestAdmissionBoundsEachUserAndEveryoneAndForgetsIdleUsers(t *testing.T) {
	a := newAdmission(2, 3)
	r1, e1 := a.acquire("ann")
	r2, e2 := a.acquire("ann")
	_, e3 := a.acquire("ann")
	if e1 != nil || e2 != nil || e3 != errUserBusy {
		t.Fatalf("ann's third request: %v, want 429 (first two: %v %v)", e3, e1, e2)
	}
	r4, e4 := a.acquire("bob")
	_, e5 := a.acquire("carol")
	if e4 != nil || e5 != errOverloaded {
		t.Fatalf("carol's request with 3 of 3 admitted: %v, want 503 (bob's: %v)", e5, e4)
	}
	r1()
	r1() // releasing twice frees one place only
	if _, err := a.acquire("carol"); err != nil {
		t.Fatalf("carol after a place freed: %v", err)
	}
	r2()
	r4()
	if _, ok := a.users["ann"]; ok || len(a.users) != 1 {
		t.Fatalf("users with nothing admitted are kept: %v", a.users)
	}
}
