package redisstore

import (
	"container/list"
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/offlinebox/offlinebox/backoff"

	"github.com/offlinebox/offlinebox/schemas"
)

// Sealer seals bodies and previews for the place they will be stored at
// (package seal implements it). The nonce is derived from (epoch, seq),
// so a body must be sealed only for the seq it is stored as.
type Sealer interface {
	SealBody(ctx context.Context, conv string, epoch, seq uint64, m *schemas.Message) (*schemas.Message, error)
	OpenBody(ctx context.Context, conv string, epoch, seq uint64, m *schemas.Message) (*schemas.Message, error)
	SealPreview(ctx context.Context, conv string, epoch, seq uint64, text string) (string, error)
	// WrappedKey is conv's wrapped data key (what sealed records carry).
	WrappedKey(ctx context.Context, conv string) (string, error)
}

// WrappedDataKey is conv's wrapped data key for a sealed record to carry
// (Sequenced.data_key); "" without a Sealer.
func (s *Store) WrappedDataKey(ctx context.Context, conv string) (string, error) {
	if s.cfg.Sealer == nil {
		return "", nil
	}
	w, err := s.cfg.Sealer.WrappedKey(ctx, conv)
	if err != nil {
		return "", fmt.Errorf("data key of %s: %w", conv, err)
	}
	return w, nil
}

// SealedInRecordEpoch is seal.SealedInRecordEpoch: the body was sealed
// in the epoch of the record holding it.
const SealedInRecordEpoch = 1

// sealedPreviewMark starts a sealed preview (seal.SealedPreviewMark).
const sealedPreviewMark = "\x01s1:"

// Bounds of sealed sequencing against another writer: calls in a row that
// sequence nothing because the conversation moved under the prediction,
// the time they may take, and the waits between them (jittered, so two
// racing writers fall out of step).
const (
	maxSealMisses   = 8
	sealRaceTimeout = 2 * time.Second
	sealRaceWaitMin = 2 * time.Millisecond
	sealRaceWaitMax = 100 * time.Millisecond
)

// ErrSealRaced: sealed sequencing kept mispredicting the conversation's
// seqs past its bounds: another writer sequences it at the same time. The
// records it gave up are SeqRaced, nothing changed for them.
var ErrSealRaced = errors.New("conversation sequenced elsewhere while its bodies were sealed")

// sequenceSealed is Sequence with sealed bodies. Lua cannot encrypt, and
// the seq is allocated in the script, so the bodies are sealed for the
// seqs they are predicted to get: the conversation's (epoch, last seq)
// as the previous call left it (a bounded cache; meta when unknown; the
// write time as the epoch of a new conversation), record i for the i-th
// next seq. The script stops before the first record that would get
// another seq (a duplicate or a refusal before it, or another writer) and
// changes nothing for it and those after; they are sealed again for the
// seq it returned and sent again. Duplicates need no seal (their stored
// entry comes back).
func (s *Store) sequenceSealed(ctx context.Context, conv string, msgs []*schemas.Message, probes []string, writeMS int64) (*SequenceResult, error) {
	items := make([]SequencedItem, len(msgs))
	var res *SequenceResult
	misses := 0
	var racing time.Time // the first miss in a row
	for start := 0; start < len(msgs); {
		if misses > 0 {
			if misses >= maxSealMisses || time.Since(racing) >= sealRaceTimeout {
				s.giveUpRaced(items[start:], misses, time.Since(racing))
				break
			}
			if err := (backoff.Policy{Min: sealRaceWaitMin, Max: sealRaceWaitMax}).Wait(ctx, misses, nil); err != nil {
				return nil, fmt.Errorf("sequence %s: %w", conv, err)
			}
		}
		r, err := s.sealedPass(ctx, conv, msgs[start:], probes, writeMS, misses > 0)
		if err != nil {
			if start == 0 || !Permanent(err) {
				// nothing sequenced yet, or a store to wait for: the batch
				// again finds the earlier records as duplicates
				return nil, err
			}
			// Earlier calls gave records their seqs: those stand, and the
			// rest are given up with the reason.
			for i := start; i < len(items); i++ {
				items[i] = SequencedItem{Status: SeqFailed, Reason: err}
			}
			break
		}
		done := 0
		for done < len(r.Items) && r.Items[done].Status != seqNotDone {
			items[start+done] = r.Items[done]
			done++
		}
		res = r
		if done == 0 {
			if misses == 0 {
				racing = time.Now()
			}
			misses++
			continue
		}
		misses = 0
		start += done
	}
	res.Items = items
	return res, nil
}

// sealedPass seals msgs for the seqs they are predicted to get and runs
// the script once; recheck reads the prediction from the meta.
func (s *Store) sealedPass(ctx context.Context, conv string, msgs []*schemas.Message, probes []string, writeMS int64,
	recheck bool) (*SequenceResult, error) {
	pos, err := s.predict(ctx, conv, writeMS, recheck)
	if err != nil {
		return nil, fmt.Errorf("sequence %s: %w", conv, err)
	}
	sealed, previews, seal, err := s.sealBatch(ctx, conv, pos, msgs)
	if err != nil {
		return nil, fmt.Errorf("sequence %s: %w", conv, err)
	}
	r, err := s.runSequence(ctx, conv, sealed, previews, probes, writeMS, seal)
	if err != nil {
		s.predicted.forget(conv)
		return nil, fmt.Errorf("sequence %s: %w", conv, err)
	}
	s.predicted.put(conv, Position{Epoch: r.Epoch, Seq: r.counter})
	return r, nil
}

// giveUpRaced marks records SeqRaced: a writer that keeps racing this one
// would be waited for without end, and only a store that is down is
// waited for (the caller dead-letters them with the reason).
func (s *Store) giveUpRaced(items []SequencedItem, misses int, took time.Duration) {
	why := fmt.Errorf("%w: %d tries in %s", ErrSealRaced, misses, took.Round(time.Millisecond))
	for i := range items {
		items[i] = SequencedItem{Status: SeqRaced, Reason: why}
	}
}

// sealBatch seals each message body and preview for the seq it is
// predicted to get, and builds the script's sealing arguments.
func (s *Store) sealBatch(ctx context.Context, conv string, pos Position, msgs []*schemas.Message) ([]*schemas.Message, []string, []any, error) {
	sealed := make([]*schemas.Message, len(msgs))
	previews := make([]string, len(msgs))
	args := make([]any, 0, 1+len(msgs))
	args = append(args, pos.Epoch)
	for i, m := range msgs {
		seq := pos.Seq + 1 + uint64(i)
		if m.GetKind() != schemas.Kind_KIND_MESSAGE {
			sealed[i] = m
			args = append(args, "")
			continue
		}
		var err error
		if m.GetSealedEpoch() != 0 {
			// Already sealed (a restore re-applies its changelog record):
			// stored byte-identical, never sealed twice. It still must land
			// where it was sealed: the predicted seq guards it as any other.
			sealed[i] = m
			args = append(args, seq)
			if previews[i], err = s.restoredPreview(ctx, conv, pos.Epoch, seq, m); err != nil {
				return nil, nil, nil, err
			}
			continue
		}
		if sealed[i], err = s.cfg.Sealer.SealBody(ctx, conv, pos.Epoch, seq, m); err != nil {
			return nil, nil, nil, err
		}
		if previews[i], err = s.cfg.Sealer.SealPreview(ctx, conv, pos.Epoch, seq, sequencePreview(m)); err != nil {
			return nil, nil, nil, err
		}
		args = append(args, seq)
	}
	return sealed, previews, args, nil
}

// restoredPreview is the sealed preview of an already sealed body for
// (epoch, seq); "" when it does not open there (the script then stops
// before it if the place is not the one predicted).
func (s *Store) restoredPreview(ctx context.Context, conv string, epoch, seq uint64, m *schemas.Message) (string, error) {
	open, err := s.cfg.Sealer.OpenBody(ctx, conv, epoch, seq, m)
	if err != nil {
		return "", nil // a mispredicted place: the script stops before it
	}
	sealedIn := m.GetSealedEpoch()
	if sealedIn == SealedInRecordEpoch {
		sealedIn = epoch
	}
	return s.cfg.Sealer.SealPreview(ctx, conv, sealedIn, seq, sequencePreview(open))
}

// predict is conv's (epoch, last seq) to seal for: cached, or read from
// meta (fresh forces the read); a conversation without meta starts in
// the epoch writeMS, as the script makes it.
func (s *Store) predict(ctx context.Context, conv string, writeMS int64, fresh bool) (Position, error) {
	if p, ok := s.predicted.get(conv); ok && !fresh {
		return p, nil
	}
	ctx, cancel := context.WithTimeout(ctx, s.cfg.CallTimeout)
	defer cancel()
	m, err := s.rdb.HMGet(ctx, s.keys.ConvMeta(conv), MetaSeq, MetaEpoch).Result()
	if err != nil && err != redis.Nil {
		return Position{}, fmt.Errorf("read counter: %w", err)
	}
	// as the script reads meta: an epoch of its own, or the write time
	p := Position{Epoch: uint64(writeMS)}
	if len(m) == 2 {
		if m[1] != nil {
			p.Epoch = readReplyUint(m[1])
		}
		if m[0] != nil {
			p.Seq = readReplyUint(m[0])
		}
	}
	return p, nil
}

// SealedPreviewText is the preview of a stored (sealed) message: opened,
// cut, and sealed again under the preview key.
func (s *Store) SealedPreviewText(ctx context.Context, sq *schemas.Sequenced) (string, error) {
	m := sq.GetMessage()
	if s.cfg.Sealer == nil || m.GetSealedEpoch() == 0 {
		return sequencePreview(m), nil
	}
	conv := m.GetConvId()
	open, err := s.cfg.Sealer.OpenBody(ctx, conv, sq.GetEpoch(), sq.GetSeq(), m)
	if err != nil {
		return "", fmt.Errorf("preview of %s/%d: %w", conv, sq.GetSeq(), err)
	}
	sealedIn := m.GetSealedEpoch()
	if sealedIn == SealedInRecordEpoch {
		sealedIn = sq.GetEpoch()
	}
	return s.cfg.Sealer.SealPreview(ctx, conv, sealedIn, sq.GetSeq(), sequencePreview(open))
}

// positionCache is a bounded LRU of positions, safe for concurrent use.
type positionCache struct {
	mu    sync.Mutex
	cap   int
	order *list.List // of *posEntry, most recent first
	byID  map[string]*list.Element
}

type posEntry struct {
	conv string
	pos  Position
}

func newPositionCache(size int) *positionCache {
	return &positionCache{cap: size, order: list.New(), byID: map[string]*list.Element{}}
}

func (c *positionCache) get(conv string) (Position, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.byID[conv]
	if !ok {
		return Position{}, false
	}
	c.order.MoveToFront(e)
	return e.Value.(*posEntry).pos, true
}

func (c *positionCache) put(conv string, p Position) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.byID[conv]; ok {
		e.Value.(*posEntry).pos = p
		c.order.MoveToFront(e)
		return
	}
	c.byID[conv] = c.order.PushFront(&posEntry{conv: conv, pos: p})
	for c.order.Len() > c.cap {
		old := c.order.Remove(c.order.Back()).(*posEntry)
		delete(c.byID, old.conv)
	}
}

func (c *positionCache) forget(conv string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.byID[conv]; ok {
		c.order.Remove(e)
		delete(c.byID, conv)
	}
}
