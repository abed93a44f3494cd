package redisstore

import (
	"context"
	"fmt"
	"strconv"
	"time"
)

// ConfirmedRetention is the retention policy last confirmed (Keys.
// RetentionConfirmed): the file's bytes and digest, where it was read, how
// it was confirmed (start, reload, allow_shrink, apply) and when. The
// expiry sweep never deletes what it keeps.
type ConfirmedRetention struct {
	Policy []byte
	Digest string
	Source string
	How    string
	At     time.Time
}

// ConfirmedRetention reads the policy last confirmed; ok is false when
// none ever was.
func (s *Store) ConfirmedRetention(ctx context.Context) (ConfirmedRetention, bool, error) {
	ctx, cancel := context.WithTimeout(ctx, s.cfg.CallTimeout)
	defer cancel()
	f, err := s.rdb.HGetAll(ctx, s.keys.RetentionConfirmed()).Result()
	if err != nil {
		return ConfirmedRetention{}, false, fmt.Errorf("read the confirmed retention policy: %w", err)
	}
	if len(f) == 0 {
		return ConfirmedRetention{}, false, nil
	}
	ms, err := strconv.ParseInt(f["at"], 10, 64)
	if err != nil || f["digest"] == "" {
		return ConfirmedRetention{}, false, fmt.Errorf("%w: the confirmed retention policy %s lacks its digest or time",
			ErrMalformed, s.keys.RetentionConfirmed())
	}
	return ConfirmedRetention{Policy: []byte(f["policy"]), Digest: f["digest"], Source: f["source"], How: f["how"],
		At: time.UnixMilli(ms)}, true, nil
}

// ConfirmRetention records c as the policy last confirmed, whole (one
// HSET of every field).
func (s *Store) ConfirmRetention(ctx context.Context, c ConfirmedRetention) error {
	ctx, cancel := context.WithTimeout(ctx, s.cfg.CallTimeout)
	defer cancel()
	err := s.rdb.HSet(ctx, s.keys.RetentionConfirmed(), "policy", string(c.Policy), "digest", c.Digest,
		"source", c.Source, "how", c.How, "at", strconv.FormatInt(c.At.UnixMilli(), 10)).Err()
	if err != nil {
		return fmt.Errorf("confirm the retention policy: %w", err)
	}
	return nil
}
