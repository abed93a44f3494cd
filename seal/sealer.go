package seal

import (
	"container/list"
	"context"
	"crypto/cipher"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"sync"

	"google.golang.org/protobuf/proto"

	"github.com/offlinebox/offlinebox/schemas"
)

// KeyStore keeps the wrapped data keys (redisstore.Store is one).
type KeyStore interface {
	// DataKey is the stored wrapped key of conv ("" when none).
	DataKey(ctx context.Context, conv string) (string, error)
	// PutDataKey stores wrapped unless conv has a key already; it returns
	// the key stored (the one given, or the one found).
	PutDataKey(ctx context.Context, conv, wrapped string) (string, error)
}

// DefaultCacheSize bounds the unwrapped data keys a Sealer keeps.
const DefaultCacheSize = 50000

// maxPart is the largest epoch or seq a nonce holds (6 bytes each).
const maxPart = 1<<48 - 1

// Errors of sealing and opening.
var (
	// ErrNoDataKey: a sealed body of a conversation without a data key.
	ErrNoDataKey = errors.New("conversation has no data key")
	// ErrOpen: a sealed body did not open (tampered, or moved to another
	// seq or conversation).
	ErrOpen = errors.New("sealed body does not open")
)

// Sealer seals and opens bodies and previews with per-conversation data
// keys, kept wrapped in a KeyStore and unwrapped in a bounded cache. It
// is safe for concurrent use.
type Sealer struct {
	ring  KeyRing
	store KeyStore

	mu    sync.Mutex
	cap   int
	order *list.List // of *convKeys, most recent first
	byID  map[string]*list.Element
}

type convKeys struct {
	conv    string
	wrapped string // the stored form the keys were unwrapped from
	body    cipher.AEAD
	preview cipher.AEAD
}

// NewSealer returns a Sealer over ring and store keeping at most
// cacheSize unwrapped keys (DefaultCacheSize when 0).
func NewSealer(ring KeyRing, store KeyStore, cacheSize int) *Sealer {
	if cacheSize <= 0 {
		cacheSize = DefaultCacheSize
	}
	return &Sealer{ring: ring, store: store, cap: cacheSize, order: list.New(), byID: map[string]*list.Element{}}
}

// Ring is the key ring the Sealer wraps with.
func (s *Sealer) Ring() KeyRing { return s.ring }

// keys returns conv's data keys; create makes one when conv has none.
func (s *Sealer) keys(ctx context.Context, conv string, create bool) (*convKeys, error) {
	s.mu.Lock()
	if e, ok := s.byID[conv]; ok {
		s.order.MoveToFront(e)
		s.mu.Unlock()
		return e.Value.(*convKeys), nil
	}
	s.mu.Unlock()
	stored, err := s.store.DataKey(ctx, conv)
	if err != nil {
		return nil, fmt.Errorf("read data key of %s: %w", conv, err)
	}
	if stored == "" {
		if !create {
			return nil, fmt.Errorf("%s: %w", conv, ErrNoDataKey)
		}
		if stored, err = s.create(ctx, conv); err != nil {
			return nil, err
		}
	}
	w, err := ParseWrapped(stored)
	if err != nil {
		return nil, fmt.Errorf("data key of %s: %w", conv, err)
	}
	raw, err := s.ring.Unwrap(ctx, conv, w)
	if err != nil {
		return nil, err
	}
	k, err := deriveKeys(conv, raw)
	if err != nil {
		return nil, err
	}
	k.wrapped = stored
	s.mu.Lock()
	defer s.mu.Unlock()
	if e, ok := s.byID[conv]; ok {
		return e.Value.(*convKeys), nil
	}
	s.byID[conv] = s.order.PushFront(k)
	for s.order.Len() > s.cap {
		old := s.order.Remove(s.order.Back()).(*convKeys)
		delete(s.byID, old.conv)
	}
	return k, nil
}

// WrappedKey is conv's wrapped data key as stored (the cached one when
// its keys are cached): what a sealed record carries so the key is
// durable outside Redis (Sequenced.data_key).
func (s *Sealer) WrappedKey(ctx context.Context, conv string) (string, error) {
	k, err := s.keys(ctx, conv, false)
	if err != nil {
		return "", err
	}
	return k.wrapped, nil
}

// create makes, wraps and stores a new data key; when another writer
// stored one first, that one is returned.
func (s *Sealer) create(ctx context.Context, conv string) (string, error) {
	raw := make([]byte, 32)
	if _, err := rand.Read(raw); err != nil {
		return "", fmt.Errorf("new data key of %s: %w", conv, err)
	}
	w, err := s.ring.Wrap(ctx, conv, raw)
	if err != nil {
		return "", err
	}
	stored, err := s.store.PutDataKey(ctx, conv, w.String())
	if err != nil {
		return "", fmt.Errorf("store data key of %s: %w", conv, err)
	}
	return stored, nil
}

func deriveKeys(conv string, raw []byte) (*convKeys, error) {
	if len(raw) != 32 {
		return nil, fmt.Errorf("data key of %s is %d bytes, want 32", conv, len(raw))
	}
	body, err := newAEAD(raw)
	if err != nil {
		return nil, err
	}
	mac := hmac.New(sha256.New, raw)
	mac.Write([]byte("offlinebox preview key"))
	preview, err := newAEAD(mac.Sum(nil))
	if err != nil {
		return nil, err
	}
	return &convKeys{conv: conv, body: body, preview: preview}, nil
}

// nonce is epoch and seq, 6 bytes each, big-endian.
func nonce(epoch, seq uint64) ([]byte, error) {
	if epoch > maxPart || seq > maxPart {
		return nil, fmt.Errorf("seal: epoch %d or seq %d does not fit a nonce", epoch, seq)
	}
	var n [16]byte
	binary.BigEndian.PutUint64(n[0:8], epoch<<16)
	binary.BigEndian.PutUint64(n[6:14], seq<<16)
	return n[:12], nil
}

// keysAt are conv's keys (made when create and it has none) and the
// nonce of its message (epoch, seq): what sealing or opening one of the
// message's texts needs.
func (s *Sealer) keysAt(ctx context.Context, conv string, create bool, epoch, seq uint64) (*convKeys, []byte, error) {
	k, err := s.keys(ctx, conv, create)
	if err != nil {
		return nil, nil, err
	}
	n, err := nonce(epoch, seq)
	if err != nil {
		return nil, nil, err
	}
	return k, n, nil
}

func bodyAAD(conv string) []byte { return []byte(conv) }

// SealedInRecordEpoch is the SealedEpoch of a body sealed in the epoch of
// the record or timeline that holds it: 2 bytes a message instead of 7.
// A body moved into another epoch (a rebuild) names its epoch instead.
const SealedInRecordEpoch = 1

// SealBody returns a copy of m with its body sealed for (epoch, seq) of
// conv, and SealedEpoch set to SealedInRecordEpoch. Only ordinary messages carry bodies worth
// sealing; membership records are returned as they are. The nonce must
// never seal two bodies: call it only for the seq the body will be
// stored as (see redisstore's predicted sequencing).
func (s *Sealer) SealBody(ctx context.Context, conv string, epoch, seq uint64, m *schemas.Message) (*schemas.Message, error) {
	if m.GetKind() != schemas.Kind_KIND_MESSAGE {
		return m, nil
	}
	if epoch <= SealedInRecordEpoch {
		return nil, fmt.Errorf("seal %s/%d: epoch %d is reserved", conv, seq, epoch)
	}
	k, n, err := s.keysAt(ctx, conv, true, epoch, seq)
	if err != nil {
		return nil, err
	}
	out := proto.CloneOf(m)
	out.Body = k.body.Seal(make([]byte, 0, len(m.GetBody())+k.body.Overhead()), n, m.GetBody(), bodyAAD(conv))
	out.SealedEpoch = SealedInRecordEpoch
	return out, nil
}

// OpenBody returns a copy of m (of seq in conv, held by a record or
// timeline of epoch) with its body opened; a message that is not sealed
// is returned as it is.
func (s *Sealer) OpenBody(ctx context.Context, conv string, epoch, seq uint64, m *schemas.Message) (*schemas.Message, error) {
	sealedIn := m.GetSealedEpoch()
	if sealedIn == 0 {
		return m, nil
	}
	if sealedIn == SealedInRecordEpoch {
		sealedIn = epoch
	}
	k, n, err := s.keysAt(ctx, conv, false, sealedIn, seq)
	if err != nil {
		return nil, err
	}
	plain, err := k.body.Open(nil, n, m.GetBody(), bodyAAD(conv))
	if err != nil {
		return nil, fmt.Errorf("open %s/%d sealed in epoch %d: %w", conv, seq, sealedIn, ErrOpen)
	}
	out := proto.CloneOf(m)
	out.Body, out.SealedEpoch = plain, 0
	return out, nil
}

// SealedPreviewMark starts a sealed preview text. Preview texts are
// valid UTF-8 cut from a body and never start with it (redisstore
// drops a leading mark from clear previews).
const SealedPreviewMark = "\x01s1:"

// SealPreview seals a preview text of message (epoch, seq) of conv. The
// result is self-contained: the mark, then base64 of epoch and seq
// (varints) and the sealed text.
func (s *Sealer) SealPreview(ctx context.Context, conv string, epoch, seq uint64, text string) (string, error) {
	if text == "" {
		return "", nil
	}
	k, n, err := s.keysAt(ctx, conv, true, epoch, seq)
	if err != nil {
		return "", err
	}
	buf := binary.AppendUvarint(nil, epoch)
	buf = binary.AppendUvarint(buf, seq)
	buf = k.preview.Seal(buf, n, []byte(text), bodyAAD(conv))
	return SealedPreviewMark + base64.RawStdEncoding.EncodeToString(buf), nil
}

// OpenPreview opens a preview text SealPreview made; other texts are
// returned as they are.
func (s *Sealer) OpenPreview(ctx context.Context, conv, text string) (string, error) {
	if len(text) < len(SealedPreviewMark) || text[:len(SealedPreviewMark)] != SealedPreviewMark {
		return text, nil
	}
	raw, err := base64.RawStdEncoding.DecodeString(text[len(SealedPreviewMark):])
	if err != nil {
		return "", fmt.Errorf("open preview of %s: %w", conv, ErrOpen)
	}
	epoch, a := binary.Uvarint(raw)
	seq, b := binary.Uvarint(raw[max(a, 0):])
	if a <= 0 || b <= 0 {
		return "", fmt.Errorf("open preview of %s: %w", conv, ErrOpen)
	}
	k, n, err := s.keysAt(ctx, conv, false, epoch, seq)
	if err != nil {
		return "", err
	}
	plain, err := k.preview.Open(nil, n, raw[a+b:], bodyAAD(conv))
	if err != nil {
		return "", fmt.Errorf("open preview of %s/%d: %w", conv, seq, ErrOpen)
	}
	return string(plain), nil
}

// Rewrap returns conv's stored data key wrapped by the ring's newest
// master key, and whether it changed (false: it already was).
func (s *Sealer) Rewrap(ctx context.Context, conv, stored string) (string, bool, error) {
	w, err := ParseWrapped(stored)
	if err != nil {
		return "", false, fmt.Errorf("data key of %s: %w", conv, err)
	}
	if w.MasterID == s.ring.Newest() {
		return stored, false, nil
	}
	raw, err := s.ring.Unwrap(ctx, conv, w)
	if err != nil {
		return "", false, err
	}
	nw, err := s.ring.Wrap(ctx, conv, raw)
	if err != nil {
		return "", false, err
	}
	return nw.String(), true, nil
}
