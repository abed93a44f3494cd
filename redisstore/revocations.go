package redisstore

import (
	"context"
	_ "embed"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

var (
	//go:embed lua/revoke.lua
	revokeLua    string
	revokeScript = redis.NewScript(revokeLua)
)

// RevokedAllDevices is the field of Keys.Revoked that covers every device
// of the user (':' is in no id).
const RevokedAllDevices = ":"

// Bounds of the revocation log: what a node that missed a few polls reads
// back, not a history (the records of Keys.Revoked are that).
const (
	RevocationLogKeep = 10 * time.Minute
	revocationLogMax  = 10_000
)

// Revocation is what is revoked of one user: the tokens issued before
// User (every device), or before Devices[d] for device d.
type Revocation struct {
	User    time.Time
	Devices map[string]time.Time
}

// Covers reports whether a token of device issued at issued is revoked
// (a token with no issue time, issued zero, is covered by any
// revocation).
func (r Revocation) Covers(device string, issued time.Time) bool {
	if issued.Before(r.User) {
		return true
	}
	d, ok := r.Devices[device]
	return ok && device != "" && issued.Before(d)
}

// Merge raises r by one revocation of device (RevokedAllDevices: every
// device) before at.
func (r *Revocation) Merge(device string, at time.Time) {
	if device == RevokedAllDevices || device == "" {
		if at.After(r.User) {
			r.User = at
		}
		return
	}
	if r.Devices == nil {
		r.Devices = map[string]time.Time{}
	}
	if at.After(r.Devices[device]) {
		r.Devices[device] = at
	}
}

// RevocationEntry is one revocation of the log.
type RevocationEntry struct {
	User, Device string // Device: RevokedAllDevices for every device
	At           time.Time
}

// Revoke refuses the tokens of user's device (every device when device is
// empty) issued before at: it raises the user's record, kept at least
// keep (the longest a token issued before at may live), then adds the
// revocation to the log every API node reads. Repeating it changes
// nothing more.
func (s *Store) Revoke(ctx context.Context, user, device string, at time.Time, keep time.Duration) error {
	if device == "" {
		device = RevokedAllDevices
	}
	ctx, cancel := context.WithTimeout(ctx, s.cfg.CallTimeout)
	defer cancel()
	if err := revokeScript.Run(ctx, s.rdb, []string{s.keys.Revoked(user)}, device, at.UnixMilli(), keep.Milliseconds()).Err(); err != nil {
		return fmt.Errorf("revoke %s/%s: %w", user, device, err)
	}
	log := s.keys.RevocationLog()
	_, err := s.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.ZAdd(ctx, log, redis.Z{Score: float64(at.UnixMilli()), Member: user + ":" + device})
		p.ZRemRangeByScore(ctx, log, "-inf", "("+strconv.FormatInt(at.Add(-RevocationLogKeep).UnixMilli(), 10))
		p.ZRemRangeByRank(ctx, log, 0, -revocationLogMax-1)
		p.PExpire(ctx, log, 2*RevocationLogKeep)
		return nil
	})
	if err != nil {
		return fmt.Errorf("log the revocation of %s/%s: %w", user, device, err)
	}
	return nil
}

// RevokedOf reads user's revocations.
func (s *Store) RevokedOf(ctx context.Context, user string) (Revocation, error) {
	ctx, cancel := context.WithTimeout(ctx, s.cfg.CallTimeout)
	defer cancel()
	h, err := s.rdb.HGetAll(ctx, s.keys.Revoked(user)).Result()
	if err != nil {
		return Revocation{}, fmt.Errorf("read the revocations of %s: %w", user, err)
	}
	var r Revocation
	for f, v := range h {
		ms, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			continue
		}
		r.Merge(f, time.UnixMilli(ms))
	}
	return r, nil
}

// RevocationsSince reads the log's revocations at or after since, oldest
// first, at most limit.
func (s *Store) RevocationsSince(ctx context.Context, since time.Time, limit int) ([]RevocationEntry, error) {
	ctx, cancel := context.WithTimeout(ctx, s.cfg.CallTimeout)
	defer cancel()
	zs, err := s.rdb.ZRangeByScoreWithScores(ctx, s.keys.RevocationLog(), &redis.ZRangeBy{
		Min: strconv.FormatInt(since.UnixMilli(), 10), Max: "+inf", Count: int64(limit)}).Result()
	if err != nil {
		return nil, fmt.Errorf("read the revocation log: %w", err)
	}
	out := make([]RevocationEntry, 0, len(zs))
	for _, z := range zs {
		m, _ := z.Member.(string)
		user, dev, ok := strings.Cut(m, ":")
		if !ok {
			continue
		}
		if dev == "" {
			dev = RevokedAllDevices
		}
		out = append(out, RevocationEntry{User: user, Device: dev, At: time.UnixMilli(int64(z.Score))})
	}
	return out, nil
}
