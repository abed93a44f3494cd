package auth

import (
	"crypto/sha256"
	"sync"
	"time"
)

// maxVerifiedTokens bounds the tokens a Keyring remembers having verified.
const maxVerifiedTokens = 8192

// verifiedTokens remembers the tokens a Keyring verified, until they
// expire: a device sends the same token with every request (a reconnect
// is three of them), and parsing and checking a JWT again cost more than
// any other part of admitting a request. A token is remembered by its
// SHA-256, so the table holds no token and its lookups compare digests,
// not secrets; and only until its expiry, before which the full check
// would accept it again (its signature does not change, nor its issue
// and not-before times, which were already in the past or within the
// leeway).
type verifiedTokens struct {
	mu sync.Mutex
	m  map[[sha256.Size]byte]verifiedToken
}

type verifiedToken struct {
	id  Identity
	exp time.Time
}

func newVerifiedTokens() *verifiedTokens {
	return &verifiedTokens{m: map[[sha256.Size]byte]verifiedToken{}}
}

// get is the identity of a token verified before that has not expired at now.
func (v *verifiedTokens) get(digest [sha256.Size]byte, now time.Time) (Identity, bool) {
	v.mu.Lock()
	defer v.mu.Unlock()
	t, ok := v.m[digest]
	if !ok || !now.Before(t.exp) {
		return Identity{}, false
	}
	return t.id, true
}

// put remembers a verified token. When the table is full the expired are
// dropped, and if that frees nothing, all of it: a burst of new tokens is
// then verified in full, as it would be without the table.
func (v *verifiedTokens) put(digest [sha256.Size]byte, id Identity, exp, now time.Time) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if len(v.m) >= maxVerifiedTokens {
		for d, t := range v.m {
			if !now.Before(t.exp) {
				delete(v.m, d)
			}
		}
		if len(v.m) >= maxVerifiedTokens {
			clear(v.m)
		}
	}
	v.m[digest] = verifiedToken{id: id, exp: exp}
}

func (v *verifiedTokens) len() int {
	v.mu.Lock()
	defer v.mu.Unlock()
	return len(v.m)
}
