package main

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/offlinebox/offlinebox/api"
	"github.com/offlinebox/offlinebox/auth"
	"github.com/offlinebox/offlinebox/bench/internal/harness"
	"github.com/offlinebox/offlinebox/embedded"
	"github.com/offlinebox/offlinebox/internal/testenv"
	"github.com/offlinebox/offlinebox/redisstore"
	"github.com/offlinebox/offlinebox/schemas"
	"github.com/offlinebox/offlinebox/stream"
)

// TestOverloadedAPIAnswers503WithRetryAfterAndRecovers holds Redis still
// (CLIENT PAUSE on a redis-server of the test's own) while many devices
// sync at once: the API works on at most MaxInFlight of them, holds the
// others in its queue for at most QueueWait (well below the pause), then
// answers them 503 with Retry-After instead of waiting for Redis, uses
// no more Redis connections than its pool, and serves normally once Redis
// answers again, with no goroutine left behind.
func TestOverloadedAPIAnswers503WithRetryAfterAndRecovers(t *testing.T) {
	// go-redis keeps pipelines in a pool of their own beside the
	// commands' pool: the client's connections are bounded by both.
	const inFlight, pool, pipelinePool, devices = 4, 4, 4, 40
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	rp, err := embedded.StartRedis(ctx, embedded.RedisOptions{Dir: t.TempDir()})
	if err != nil {
		testenvMissing(t, err)
	}
	defer func() { _ = rp.Stop(context.Background()) }()
	_, brokers := testenv.Kafka(t, 1, schemas.TopicMessages, schemas.TopicReceipts)
	rdb := redis.NewClient(&redis.Options{Addr: rp.Addr(), PoolSize: pool, PipelinePoolSize: pipelinePool, ClientName: "api-under-test",
		ReadTimeout: 10 * time.Second, PoolTimeout: 10 * time.Second})
	defer rdb.Close()
	store, err := redisstore.New(rdb, redisstore.Config{Prefix: "ov:"})
	if err != nil {
		t.Fatal(err)
	}
	keyring, err := auth.New(auth.Config{Secret: []byte(jwtSecret)})
	if err != nil {
		t.Fatal(err)
	}
	prod, err := stream.NewProducer(brokers)
	if err != nil {
		t.Fatal(err)
	}
	defer prod.Close()
	srv, err := api.New(api.Config{MaxInFlight: inFlight, RetryAfter: 2 * time.Second, QueueWait: 500 * time.Millisecond},
		api.Deps{Router: redisstore.NewInboxRouter(store, nil, 0), Keyring: keyring, Producer: prod, Logger: harness.QuietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv.Handler())
	defer hs.Close()
	baseline := runtime.NumGoroutine()

	admin := redis.NewClient(&redis.Options{Addr: rp.Addr()})
	defer admin.Close()
	if err := admin.Do(ctx, "CLIENT", "PAUSE", "5000", "ALL").Err(); err != nil {
		t.Fatal(err)
	}
	answers := stormOf(t, hs.URL, keyring, devices)

	var admitted, overloaded []answer
	for _, a := range answers {
		switch {
		case a.status == http.StatusServiceUnavailable && a.code == "overloaded":
			overloaded = append(overloaded, a)
		case a.status == http.StatusOK:
			admitted = append(admitted, a)
		default:
			t.Errorf("an answer neither served nor refused as overloaded: %d %s", a.status, a.code)
		}
	}
	if len(admitted) == 0 || len(admitted) > inFlight || len(overloaded) < devices-inFlight {
		t.Fatalf("%d served, %d refused as overloaded; want at most %d served and the rest refused", len(admitted), len(overloaded), inFlight)
	}
	for _, a := range overloaded {
		if a.retryAfter != "2" {
			t.Fatalf("a 503 says Retry-After %q, want 2", a.retryAfter)
		}
		// Refused when its queue wait ran out, not after the held requests.
		if a.order > admitted[0].order {
			t.Fatalf("a refusal came after a served request: it waited for Redis")
		}
	}
	if n := apiConnections(t, admin); n > pool+pipelinePool {
		t.Errorf("the API opened %d Redis connections, more than its pools of %d and %d", n, pool, pipelinePool)
	}
	if again := stormOf(t, hs.URL, keyring, 1); again[0].status != http.StatusOK {
		t.Errorf("after the storm a sync gets %d", again[0].status)
	}
	http.DefaultClient.CloseIdleConnections()
	hs.CloseClientConnections()
	deadline := time.Now().Add(10 * time.Second)
	for runtime.NumGoroutine() > baseline+5 && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	if n := runtime.NumGoroutine(); n > baseline+5 {
		t.Errorf("%d goroutines after the storm, %d before", n, baseline)
	}
}

func testenvMissing(t *testing.T, err error) {
	t.Helper()
	if strings.Contains(err.Error(), "not found") || strings.Contains(err.Error(), "executable file") {
		t.Skipf("redis-server: %v", err)
	}
	t.Fatal(err)
}

// answer is one device's sync answer during the storm; order is when it
// came, among all answers.
type answer struct {
	status     int
	code       string
	retryAfter string
	order      int
}

// stormOf has n devices sync at once (they start together) and returns
// their answers in the order they came.
func stormOf(t *testing.T, base string, kr *auth.Keyring, n int) []answer {
	t.Helper()
	var mu sync.Mutex
	var out []answer
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range n {
		tok, err := kr.Mint("storm-user-"+strconv.Itoa(i), "dev"+string(rune('a'+i%26))+string(rune('a'+i/26)), time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			req, _ := http.NewRequest(http.MethodPost, base+"/v1/sync", strings.NewReader(`{}`))
			req.Header.Set("Authorization", "Bearer "+tok)
			resp, err := http.DefaultClient.Do(req)
			a := answer{}
			if err == nil {
				var eb struct{ Error struct{ Code string } }
				_ = json.NewDecoder(resp.Body).Decode(&eb)
				resp.Body.Close()
				a = answer{status: resp.StatusCode, code: eb.Error.Code, retryAfter: resp.Header.Get("Retry-After")}
			}
			mu.Lock()
			a.order = len(out)
			out = append(out, a)
			mu.Unlock()
		}()
	}
	close(start)
	wg.Wait()
	return out
}

// apiConnections counts the Redis connections the API's client opened.
func apiConnections(t *testing.T, admin *redis.Client) int {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	list, err := admin.ClientList(ctx).Result()
	if err != nil {
		t.Fatal(err)
	}
	return strings.Count(list, "name=api-under-test ")
}
