package readpath

import (
	"github.com/redis/go-redis/v9"

	"github.com/offlinebox/offlinebox/redisstore"
)

// Reader is the read path over one router's main store: sync, pages of a
// timeline and the conversation list, with the caches they keep (member
// and notice copies, shared slice reads). It is safe for concurrent use;
// one Reader per process keeps the copies for every request.
type Reader struct {
	side
	router *redisstore.InboxRouter
	st     *redisstore.Store // the router's main store: the conversations
	// flights collapse identical concurrent slice reads of sync.
	flights *sliceFlights
	// notices are copies of small groups' notices that sync and the list
	// count from.
	notices *noticeCopies
	// members are copies of small groups' members that sync and the list
	// read from.
	members *memberCopies
}

// New returns a Reader over router: the conversations are read on its
// main store, a user's own keys on the store holding them.
func New(router *redisstore.InboxRouter) *Reader {
	st := router.Main()
	return &Reader{side: sideOf(st), router: router, st: st,
		flights: newSliceFlights(), notices: newNoticeCopies(), members: newMemberCopies()}
}

// side is what the read path reads one store with.
type side struct {
	rdb  redis.UniversalClient
	keys redisstore.Keys
	cfg  redisstore.Config
}

func sideOf(st *redisstore.Store) side {
	return side{rdb: st.Client(), keys: st.Keys(), cfg: st.Config()}
}
