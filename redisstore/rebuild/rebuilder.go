package rebuild

import (
	"github.com/redis/go-redis/v9"

	"github.com/offlinebox/offlinebox/redisstore"
)

// Rebuilder rebuilds the conversations and indexes of one store.
type Rebuilder struct {
	st   *redisstore.Store
	rdb  redis.UniversalClient
	keys redisstore.Keys
	cfg  redisstore.Config
}

// New returns a Rebuilder over st.
func New(st *redisstore.Store) *Rebuilder {
	return &Rebuilder{st: st, rdb: st.Client(), keys: st.Keys(), cfg: st.Config()}
}

// hashString turns one HMGET answer into a string ("" when absent).
func hashString(v any) string {
	s, _ := v.(string)
	return s
}

// boolCode is a flag as the scripts read it.
func boolCode(b bool) string {
	if b {
		return "1"
	}
	return "0"
}
