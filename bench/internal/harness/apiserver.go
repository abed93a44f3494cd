package harness

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/offlinebox/offlinebox/api"
	"github.com/offlinebox/offlinebox/auth"
	"github.com/offlinebox/offlinebox/redisstore"
)

// API is the HTTP API served in-process on 127.0.0.1.
type API struct {
	// URL is the base URL, http://127.0.0.1:PORT.
	URL     string
	Keyring *auth.Keyring
	Store   *redisstore.Store

	rdb      *redis.Client
	producer *kgo.Client
	srv      *http.Server
	done     chan struct{}
}

// APIOptions tune the served API.
type APIOptions struct {
	// Prefix of the Redis keys (the fanout's).
	Prefix string
	// History serves roaming pages (nil: none).
	History api.HistoryReader
	// Config of the server; zero values take the API's defaults.
	Config api.Config
	// RedisPool is the API's Redis connection pool size.
	RedisPool int
	// Opener opens sealed bodies (nil: bodies are in the clear).
	Opener api.BodyOpener
}

// StartAPI serves the API over the stack's Redis and Kafka.
func StartAPI(st *Stack, o APIOptions) (*API, error) {
	a := &API{done: make(chan struct{})}
	if err := a.start(st, o); err != nil {
		a.Stop()
		return nil, err
	}
	return a, nil
}

func (a *API) start(st *Stack, o APIOptions) error {
	var err error
	if a.Keyring, err = auth.New(auth.Config{Secret: []byte("offlinebox-bench-secret-0123456789"), TTL: 24 * time.Hour}); err != nil {
		return err
	}
	if o.RedisPool == 0 {
		o.RedisPool = 64
	}
	a.rdb = redis.NewClient(&redis.Options{Addr: st.RedisAddr, PoolSize: o.RedisPool, PoolTimeout: 30 * time.Second})
	if a.Store, err = redisstore.New(a.rdb, redisstore.Config{Prefix: o.Prefix}); err != nil {
		return err
	}
	if a.producer, err = NewProducer(st); err != nil {
		return err
	}
	srv, err := api.New(o.Config, api.Deps{
		Router:   redisstore.NewInboxRouter(a.Store, nil, 0),
		Keyring:  a.Keyring,
		Producer: a.producer,
		History:  o.History,
		Opener:   o.Opener,
		Logger:   QuietLogger(),
	})
	if err != nil {
		return err
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return fmt.Errorf("listen for the API: %w", err)
	}
	a.URL = "http://" + l.Addr().String()
	a.srv = &http.Server{Handler: srv.Handler(), ReadHeaderTimeout: 10 * time.Second}
	go func() {
		defer close(a.done)
		if err := a.srv.Serve(l); err != nil && !errors.Is(err, http.ErrServerClosed) {
			fmt.Printf("api server: %v\n", err)
		}
	}()
	return nil
}

// Token mints a bearer token of user pinned to device.
func (a *API) Token(user, device string) (string, error) {
	return a.Keyring.Mint(user, device, 24*time.Hour)
}

// Stop shuts the server down and closes its clients.
func (a *API) Stop() {
	if a.srv != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		_ = a.srv.Shutdown(ctx)
		cancel()
		<-a.done
		a.srv = nil
	}
	if a.producer != nil {
		a.producer.Close()
		a.producer = nil
	}
	if a.rdb != nil {
		_ = a.rdb.Close()
		a.rdb = nil
	}
}
