package rebuild

import (
	"context"
	"fmt"
	"github.com/offlinebox/offlinebox/redisstore"
	"strconv"
	"strings"

	"github.com/redis/go-redis/v9"
	"google.golang.org/protobuf/proto"

	"github.com/offlinebox/offlinebox/schemas"
)

// stagedTimeline is what stageTimeline wrote.
type stagedTimeline struct {
	entries int
	dedupe  int
	// mentionAll holds the large group's @all references to restore
	// (score: write time, member: seq).
	mentionAll []redis.Z
	// notices holds the seqs of the join and leave records staged.
	notices []string
}

// stageTimeline reads the history from p.first to p.top, page by page, and
// appends each record, encoded as sequencing encodes it, to the staging
// list; it also restores the dedupe ids still within the dedupe window.
// The live timeline is not touched.
func (s *Rebuilder) stageTimeline(ctx context.Context, src HistorySource, conv string, p *rebuildPlan, lgs uint64, opt Options) (stagedTimeline, error) {
	var out stagedTimeline
	staging := s.keys.RebuildTimeline(conv)
	if err := s.rebuildCall(ctx, func(ctx context.Context) error { return s.rdb.Del(ctx, staging).Err() }); err != nil {
		return out, fmt.Errorf("rebuild %s: clear staging: %w", conv, err)
	}
	allCutoff := opt.Now.Add(-opt.Retention.TypeWindow(schemas.ConvType_CONV_TYPE_GROUP)).UnixMilli()
	today := redisstore.DayOf(opt.Now.UnixMilli())
	for lo := p.first; lo <= p.top; lo += uint64(opt.PageSize) {
		hi := min(lo+uint64(opt.PageSize)-1, p.top)
		rows, err := src.Range(ctx, conv, p.epoch, lo, hi)
		if err != nil {
			return out, fmt.Errorf("rebuild %s: read history %d..%d: %w", conv, lo, hi, err)
		}
		if uint64(len(rows)) != hi-lo+1 || rows[0].GetSeq() != lo || rows[len(rows)-1].GetSeq() != hi {
			return out, fmt.Errorf("rebuild %s: history %d..%d returned %d records: it changed during the rebuild", conv, lo, hi, len(rows))
		}
		entries := make([]any, len(rows))
		var dedupe []redisstore.DedupeRestore
		for i, e := range rows {
			raw, err := redisstore.EncodeEntry(e.GetSeq(), e.GetWriteTimeMs(), movedBody(e))
			if err != nil {
				return out, fmt.Errorf("rebuild %s: %w", conv, err)
			}
			entries[i] = raw
			m := e.GetMessage()
			if day := redisstore.DayOf(e.GetWriteTimeMs()); day+1+s.st.DedupeDays() > today && m.GetClientMsgId() != "" {
				dedupe = append(dedupe, redisstore.DedupeRestore{Day: day, Cmid: m.GetClientMsgId(), Seq: e.GetSeq()})
			}
			if m.GetKind() == schemas.Kind_KIND_MEMBER_JOIN || m.GetKind() == schemas.Kind_KIND_MEMBER_LEAVE {
				out.notices = append(out.notices, strconv.FormatUint(e.GetSeq(), 10))
			}
			if lgs > 0 && e.GetSeq() >= lgs && m.GetMentionAll() && e.GetWriteTimeMs() >= allCutoff {
				out.mentionAll = append(out.mentionAll, redis.Z{Score: float64(e.GetWriteTimeMs()), Member: e.GetSeq()})
			}
		}
		n, err := s.stagePage(ctx, conv, entries, dedupe)
		if err != nil {
			return out, err
		}
		out.entries += len(rows)
		out.dedupe += n
	}
	return out, nil
}

// stagePage appends one page to the staging list and restores its dedupe
// ids (without overwriting ids already there); it returns how many ids it
// restored.
func (s *Rebuilder) stagePage(ctx context.Context, conv string, entries []any, dedupe []redisstore.DedupeRestore) (int, error) {
	staging := s.keys.RebuildTimeline(conv)
	err := s.rebuildCall(ctx, func(ctx context.Context) error {
		_, err := s.rdb.TxPipelined(ctx, func(pl redis.Pipeliner) error {
			pl.RPush(ctx, staging, entries...)
			pl.PExpire(ctx, staging, rebuildStagingTTL)
			return nil
		})
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("rebuild %s: stage %d entries: %w", conv, len(entries), err)
	}
	n, err := s.st.RestoreDedupe(ctx, conv, dedupe)
	if err != nil {
		return 0, fmt.Errorf("rebuild %s: %w", conv, err)
	}
	return n, nil
}

// stageMembers writes the replayed member set, roles and past spans to
// their staging hashes.
func (s *Rebuilder) stageMembers(ctx context.Context, conv string, mr *memberReplay) error {
	members := make(map[string]string, len(mr.members))
	for u, at := range mr.members {
		members[u] = strconv.FormatUint(at, 10)
	}
	past := make(map[string]string, len(mr.past))
	for u, spans := range mr.past {
		past[u] = strings.Join(spans, ",")
	}
	k := s.keys
	for _, h := range []struct {
		key  string
		what string
		m    map[string]string
	}{
		{k.RebuildMembers(conv), "members", members},
		{k.RebuildRoles(conv), "roles", mr.roles},
		{k.RebuildPastMembers(conv), "former members", past},
	} {
		if err := s.stageHash(ctx, h.key, h.m); err != nil {
			return fmt.Errorf("rebuild %s: stage %s: %w", conv, h.what, err)
		}
	}
	return nil
}

// stageHash replaces a staging hash with m, in pages, each with the
// staging expiry.
func (s *Rebuilder) stageHash(ctx context.Context, key string, m map[string]string) error {
	fields := make([]any, 0, 2*rebuildMemberPage)
	flush := func() error {
		return s.rebuildCall(ctx, func(ctx context.Context) error {
			_, err := s.rdb.TxPipelined(ctx, func(pl redis.Pipeliner) error {
				pl.HSet(ctx, key, fields...)
				pl.PExpire(ctx, key, rebuildStagingTTL)
				return nil
			})
			return err
		})
	}
	if err := s.rebuildCall(ctx, func(ctx context.Context) error { return s.rdb.Del(ctx, key).Err() }); err != nil {
		return fmt.Errorf("clear: %w", err)
	}
	for u, v := range m {
		fields = append(fields, u, v)
		if len(fields) == cap(fields) {
			if err := flush(); err != nil {
				return err
			}
			fields = fields[:0]
		}
	}
	if len(fields) > 0 {
		return flush()
	}
	return nil
}

// rebuildCall runs one Redis call under the store's call timeout.
func (s *Rebuilder) rebuildCall(ctx context.Context, f func(context.Context) error) error {
	ctx, cancel := context.WithTimeout(ctx, s.cfg.CallTimeout)
	defer cancel()
	return f(ctx)
}

// movedBody is a history row's message as a rebuilt timeline holds it: a
// body sealed in the row's epoch names that epoch, since the timeline's
// may be newer (the nonce is the epoch and seq it was sealed for).
func movedBody(e *schemas.Sequenced) *schemas.Message {
	m := e.GetMessage()
	if m.GetSealedEpoch() != redisstore.SealedInRecordEpoch {
		return m
	}
	out := proto.CloneOf(m)
	out.SealedEpoch = e.GetEpoch()
	return out
}
