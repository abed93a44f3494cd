package api

import (
	"bufio"
	"fmt"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
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
