package live

import (
	"log/slog"
	"testing"

	"github.com/offlinebox/offlinebox/edge"
	"github.com/offlinebox/offlinebox/internal/testenv"
	"github.com/offlinebox/offlinebox/redisstore"
)

// testHub is a node's hub over a store of its own, never started: its
// connections only queue frames, which a test reads back.
func testHub(t *testing.T, cfg Config) *liveHub {
	t.Helper()
	rdb, prefix := testenv.Redis(t)
	st, err := redisstore.New(rdb, redisstore.Config{Prefix: prefix})
	if err != nil {
		t.Fatal(err)
	}
	router := redisstore.NewInboxRouter(st, nil, 0)
	m, err := newLiveMetrics(nil)
	if err != nil {
		t.Fatal(err)
	}
	deps := Deps{Router: router, Acker: &edge.Acker{Router: router}, Logger: quietLogger(t)}
	return newLiveHub(cfg.WithDefaults(), deps, m)
}

func quietLogger(t testing.TB) *slog.Logger {
	return slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelWarn}))
}
