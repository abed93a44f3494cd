package redisstore

import (
	"context"
	"fmt"
	"strconv"
)

// membersScanCount is how many members one HSCAN step asks for.
const membersScanCount = 1000

// Members returns every member of conv with the seq of the record that
// made them a member (0 for founders and direct participants). It pages
// through the hash, so it suits groups of any size.
func (s *Store) Members(ctx context.Context, conv string) (map[string]uint64, error) {
	out := map[string]uint64{}
	key := s.keys.Members(conv)
	var cursor uint64
	for {
		cctx, cancel := context.WithTimeout(ctx, s.cfg.CallTimeout)
		page, next, err := s.rdb.HScan(cctx, key, cursor, "", membersScanCount).Result()
		cancel()
		if err != nil {
			return nil, fmt.Errorf("members of %s: %w", conv, err)
		}
		for i := 0; i+1 < len(page); i += 2 {
			seq, err := strconv.ParseUint(page[i+1], 10, 64)
			if err != nil {
				// written only by the sequencing script: a value no try can read
				return nil, fmt.Errorf("members of %s: %w: seq of %s: %v", conv, ErrMalformedReply, page[i], err)
			}
			out[page[i]] = seq
		}
		if next == 0 {
			return out, nil
		}
		cursor = next
	}
}

// MarkLargeConverted records that every member's inbox was switched to the
// large-group form (meta `lgc`), so later batches skip the conversion.
func (s *Store) MarkLargeConverted(ctx context.Context, conv string) error {
	ctx, cancel := context.WithTimeout(ctx, s.cfg.CallTimeout)
	defer cancel()
	if err := markLargeScript.Run(ctx, s.rdb, []string{s.keys.ConvMeta(conv)}, s.fenceArg()).Err(); err != nil {
		return fmt.Errorf("mark %s converted to large: %w", conv, fenced(err))
	}
	return nil
}
