package seal

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"sync"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/offlinebox/offlinebox/schemas"
)

// memStore is an in-memory KeyStore and Registry.
type memStore struct {
	mu       sync.Mutex
	keys     map[string]string
	canaries map[string]string
}

func newMemStore() *memStore {
	return &memStore{keys: map[string]string{}, canaries: map[string]string{}}
}

func (m *memStore) DataKey(_ context.Context, conv string) (string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.keys[conv], nil
}

func (m *memStore) PutDataKey(_ context.Context, conv, w string) (string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if old, ok := m.keys[conv]; ok {
		return old, nil
	}
	m.keys[conv] = w
	return w, nil
}

func (m *memStore) Canaries(context.Context) (map[string]string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := map[string]string{}
	for k, v := range m.canaries {
		out[k] = v
	}
	return out, nil
}

func (m *memStore) PutCanary(_ context.Context, id, c string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.canaries[id]; !ok {
		m.canaries[id] = c
	}
	return nil
}

func (m *memStore) DeleteCanary(_ context.Context, id string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.canaries, id)
	return nil
}

func (m *memStore) EachDataKey(_ context.Context, fn func(conv, wrapped string) error) error {
	m.mu.Lock()
	snap := map[string]string{}
	for k, v := range m.keys {
		snap[k] = v
	}
	m.mu.Unlock()
	for k, v := range snap {
		if err := fn(k, v); err != nil {
			return err
		}
	}
	return nil
}

func (m *memStore) SwapDataKey(_ context.Context, conv, old, nw string) (bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.keys[conv] != old {
		return false, nil
	}
	m.keys[conv] = nw
	return true, nil
}

func ring(t *testing.T, keys ...MasterKey) *FileRing {
	t.Helper()
	r, err := NewFileRing(keys)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func master(t *testing.T, id string) MasterKey {
	t.Helper()
	k, err := GenerateMasterKey(id)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func msg(body string) *schemas.Message {
	return &schemas.Message{ClientMsgId: "c", Kind: schemas.Kind_KIND_MESSAGE, Body: []byte(body)}
}

func TestKeyRingRefusesBadKeyFiles(t *testing.T) {
	good := `{"id":"k1","key":"` + master(t, "k1").Key + `"}`
	tests := []struct {
		name, file, want string
	}{
		{"empty", "", "no master key"},
		{"not json", "k1 abc", "line 1"},
		{"unknown field", `{"id":"k1","key":"x","note":1}`, "unknown field"},
		{"short key", `{"id":"k1","key":"AAAA"}`, "is 3 bytes, want 32"},
		{"not base64", `{"id":"k1","key":"!!"}`, "not base64"},
		{"bad id", `{"id":"a b","key":"` + master(t, "x").Key + `"}`, "is not 1 to 64"},
		{"duplicate id", good + "\n" + good, "appears twice"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			keys, err := ParseKeyFile([]byte(tc.file))
			if err == nil {
				_, err = NewFileRing(keys)
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want one saying %q", err, tc.want)
			}
		})
	}
}

func TestSealedBodyOpensOnlyAtItsConversationAndSeq(t *testing.T) {
	ctx, st := context.Background(), newMemStore()
	s := NewSealer(ring(t, master(t, "k1")), st, 0)
	sealed, err := s.SealBody(ctx, "c1", 1700000000000, 7, msg("meet at noon"))
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(sealed.GetBody(), []byte("noon")) || sealed.GetSealedEpoch() != SealedInRecordEpoch {
		t.Fatalf("sealed body %q epoch %d", sealed.GetBody(), sealed.GetSealedEpoch())
	}
	if _, err := s.SealBody(ctx, "c2", 1700000000000, 7, msg("other")); err != nil {
		t.Fatal(err)
	}
	moved := proto.CloneOf(sealed)
	moved.SealedEpoch = 1700000000000 // as a rebuild leaves a body it moved to a newer epoch
	tests := []struct {
		name  string
		conv  string
		epoch uint64
		seq   uint64
		m     *schemas.Message
		ok    bool
	}{
		{"its own seq", "c1", 1700000000000, 7, sealed, true},
		{"another seq", "c1", 1700000000000, 8, sealed, false},
		{"another epoch", "c1", 1700000000001, 7, sealed, false},
		{"moved to a newer epoch that names its own", "c1", 1800000000000, 7, moved, true},
		{"another conversation", "c2", 1700000000000, 7, sealed, false},
		{"a conversation without a key", "c3", 1700000000000, 7, sealed, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			open, err := NewSealer(s.ring, st, 0).OpenBody(ctx, tc.conv, tc.epoch, tc.seq, tc.m)
			if tc.ok != (err == nil) {
				t.Fatalf("err = %v, want ok %v", err, tc.ok)
			}
			if tc.ok && string(open.GetBody()) != "meet at noon" {
				t.Fatalf("opened %q", open.GetBody())
			}
		})
	}
	p, err := s.SealPreview(ctx, "c1", 1700000000000, 7, "meet at")
	if err != nil || strings.Contains(p, "meet") {
		t.Fatalf("sealed preview %q, %v", p, err)
	}
	if got, err := s.OpenPreview(ctx, "c1", p); err != nil || got != "meet at" {
		t.Fatalf("preview opens to %q, %v", got, err)
	}
}

func TestRotationRewrapsKeysAndRetireRefusesWhileAKeyNeedsTheOldMaster(t *testing.T) {
	ctx, st := context.Background(), newMemStore()
	k1, k2 := master(t, "k1"), master(t, "k2")
	old := ring(t, k1)
	if err := Check(ctx, old, st); err != nil {
		t.Fatal(err)
	}
	sealed, err := NewSealer(old, st, 0).SealBody(ctx, "c1", 5, 1, msg("before rotation"))
	if err != nil {
		t.Fatal(err)
	}
	both := ring(t, k1, k2)
	if err := Retire(ctx, both, st, nil, "k1"); !errors.Is(err, ErrMasterKeyInUse) {
		t.Fatalf("retire before rekey: %v, want ErrMasterKeyInUse", err)
	}
	res, err := Rekey(ctx, both, st, nil)
	if err != nil || res.Rewrapped != 1 {
		t.Fatalf("rekey: %+v, %v", res, err)
	}
	if err := Retire(ctx, both, st, nil, "k2"); err == nil {
		t.Fatal("retiring the newest master key was allowed")
	}
	if err := Retire(ctx, both, st, nil, "k1"); err != nil {
		t.Fatalf("retire after rekey: %v", err)
	}
	onlyNew := ring(t, k2)
	if err := Check(ctx, onlyNew, st); err != nil {
		t.Fatalf("a ring without the retired key: %v", err)
	}
	open, err := NewSealer(onlyNew, st, 0).OpenBody(ctx, "c1", 5, 1, sealed)
	if err != nil || string(open.GetBody()) != "before rotation" {
		t.Fatalf("a body sealed before the rotation opens to %q, %v", open.GetBody(), err)
	}
}

func TestCheckFailsOnAWrongOrMissingMasterKey(t *testing.T) {
	ctx, st := context.Background(), newMemStore()
	if err := Check(ctx, ring(t, master(t, "k1")), st); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		ring *FileRing
		want string
	}{
		{"same id, other key", ring(t, master(t, "k1")), "is not the one that wrapped"},
		{"key missing", ring(t, master(t, "k2")), "is not in the key ring"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if err := Check(ctx, tc.ring, st); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want one saying %q", err, tc.want)
			}
		})
	}
	if err := CheckClear(ctx, st); err == nil {
		t.Fatal("a start without a key ring over sealed bodies was allowed")
	}
}

// A Redis that lost a conversation's data key (flushed) gets it back
// from the durable copy: bodies sealed before still open, and no new key
// is made for the conversation.
func TestADataKeyRedisLostComesBackFromTheDurableCopyNotAnewKey(t *testing.T) {
	ctx := context.Background()
	ring := ring(t, master(t, "k1"))
	redis, durable := newMemStore(), newMemStore()
	s := NewSealer(ring, Layered{Primary: redis, Durable: durable}, 0)
	m := &schemas.Message{ConvId: "c", Kind: schemas.Kind_KIND_MESSAGE, Body: []byte("hello")}
	sealed, err := s.SealBody(ctx, "c", 1000, 1, m)
	if err != nil {
		t.Fatal(err)
	}
	durable.keys["c"] = redis.keys["c"] // what the history sink wrote
	redis.keys = map[string]string{}    // flushed

	again := NewSealer(ring, Layered{Primary: redis, Durable: durable}, 0)
	open, err := again.OpenBody(ctx, "c", 1000, 1, sealed)
	if err != nil || string(open.GetBody()) != "hello" {
		t.Fatalf("after the flush the body opens as %q (%v)", open.GetBody(), err)
	}
	if redis.keys["c"] != durable.keys["c"] {
		t.Errorf("the key was not put back into redis")
	}
	if _, err := again.SealBody(ctx, "c", 1000, 2, m); err != nil || redis.keys["c"] != durable.keys["c"] {
		t.Errorf("sealing after the flush made another key (%v)", err)
	}
	// without the durable copy the same loss is permanent
	lost := NewSealer(ring, newMemStore(), 0)
	if _, err := lost.OpenBody(ctx, "c", 1000, 1, sealed); err == nil {
		t.Errorf("a sealer without the key opened the body")
	}
}
