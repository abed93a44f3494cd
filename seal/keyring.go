package seal

import (
	"bufio"
	"bytes"
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
)

// KeyRing wraps and unwraps data keys with master keys it never hands
// out. A KMS client can implement it; FileRing keeps the master keys in
// process memory.
type KeyRing interface {
	// Newest is the id of the master key Wrap uses.
	Newest() string
	// Wrap seals a data key of conversation conv by the newest master key.
	Wrap(ctx context.Context, conv string, dataKey []byte) (Wrapped, error)
	// Unwrap opens a data key wrapped by any master key of the ring.
	Unwrap(ctx context.Context, conv string, w Wrapped) ([]byte, error)
	// Has reports whether the ring holds master key id.
	Has(id string) bool
}

// Wrapped is a data key sealed by the master key MasterID.
type Wrapped struct {
	MasterID string
	Blob     []byte
}

// String is the stored form: "MASTER_ID:base64(blob)".
func (w Wrapped) String() string {
	return w.MasterID + ":" + base64.RawStdEncoding.EncodeToString(w.Blob)
}

// ParseWrapped reads the stored form of a wrapped key.
func ParseWrapped(s string) (Wrapped, error) {
	id, b64, ok := strings.Cut(s, ":")
	if !ok || id == "" {
		return Wrapped{}, errors.New("wrapped data key: no master key id")
	}
	blob, err := base64.RawStdEncoding.DecodeString(b64)
	if err != nil {
		return Wrapped{}, fmt.Errorf("wrapped data key of master key %s: %w", id, err)
	}
	return Wrapped{MasterID: id, Blob: blob}, nil
}

// ErrUnknownMasterKey: a data key is wrapped by a master key the ring
// does not hold (a wrong ring, or a key retired too early).
var ErrUnknownMasterKey = errors.New("master key not in the key ring")

// MasterKey is one entry of a key file.
type MasterKey struct {
	ID  string `json:"id"`
	Key string `json:"key"` // base64 of 32 bytes
}

// FileRing is a KeyRing of master keys held in memory, newest last.
type FileRing struct {
	ids   []string
	aeads map[string]cipher.AEAD
}

var _ KeyRing = (*FileRing)(nil)

// NewFileRing builds a ring from master keys, newest last. Every id must
// be unique and 1 to 64 characters of [A-Za-z0-9_.-]; every key 32 bytes.
func NewFileRing(keys []MasterKey) (*FileRing, error) {
	if len(keys) == 0 {
		return nil, errors.New("key ring: no master key")
	}
	r := &FileRing{aeads: map[string]cipher.AEAD{}}
	for i, k := range keys {
		if !validID(k.ID) {
			return nil, fmt.Errorf("key ring: master key %d: id %q is not 1 to 64 of [A-Za-z0-9_.-]", i+1, k.ID)
		}
		if _, dup := r.aeads[k.ID]; dup {
			return nil, fmt.Errorf("key ring: master key id %q appears twice", k.ID)
		}
		raw, err := base64.StdEncoding.DecodeString(k.Key)
		if err != nil {
			return nil, fmt.Errorf("key ring: master key %q: key is not base64: %w", k.ID, err)
		}
		if len(raw) != 32 {
			return nil, fmt.Errorf("key ring: master key %q is %d bytes, want 32", k.ID, len(raw))
		}
		a, err := newAEAD(raw)
		if err != nil {
			return nil, fmt.Errorf("key ring: master key %q: %w", k.ID, err)
		}
		r.ids = append(r.ids, k.ID)
		r.aeads[k.ID] = a
	}
	return r, nil
}

// LoadFileRing reads a key file: one JSON object {"id", "key"} a line,
// newest last; blank lines and lines starting with # are skipped.
func LoadFileRing(path string) (*FileRing, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("key ring: %w", err)
	}
	keys, err := ParseKeyFile(raw)
	if err != nil {
		return nil, fmt.Errorf("key ring %s: %w", path, err)
	}
	return NewFileRing(keys)
}

// ParseKeyFile reads the lines of a key file (see LoadFileRing).
func ParseKeyFile(raw []byte) ([]MasterKey, error) {
	var keys []MasterKey
	sc := bufio.NewScanner(bytes.NewReader(raw))
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		var k MasterKey
		dec := json.NewDecoder(strings.NewReader(line))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&k); err != nil {
			return nil, fmt.Errorf("line %d: %w", n, err)
		}
		keys = append(keys, k)
	}
	return keys, sc.Err()
}

// ParseKeyList reads master keys from "ID:BASE64,ID:BASE64", newest last
// (the form of the OFFLINEBOX_MASTER_KEYS environment variable).
func ParseKeyList(s string) ([]MasterKey, error) {
	var keys []MasterKey
	for i, part := range strings.Split(s, ",") {
		id, key, ok := strings.Cut(strings.TrimSpace(part), ":")
		if !ok {
			return nil, fmt.Errorf("master key %d: want ID:BASE64", i+1)
		}
		keys = append(keys, MasterKey{ID: id, Key: key})
	}
	return keys, nil
}

// GenerateMasterKey returns a new random master key named id.
func GenerateMasterKey(id string) (MasterKey, error) {
	raw := make([]byte, 32)
	if _, err := rand.Read(raw); err != nil {
		return MasterKey{}, fmt.Errorf("generate master key: %w", err)
	}
	return MasterKey{ID: id, Key: base64.StdEncoding.EncodeToString(raw)}, nil
}

func validID(id string) bool {
	if id == "" || len(id) > 64 {
		return false
	}
	for _, c := range id {
		ok := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '.' || c == '-'
		if !ok {
			return false
		}
	}
	return true
}

// Newest is the last master key of the ring.
func (r *FileRing) Newest() string { return r.ids[len(r.ids)-1] }

// IDs lists the ring's master key ids, newest last.
func (r *FileRing) IDs() []string { return append([]string(nil), r.ids...) }

// Has reports whether the ring holds master key id.
func (r *FileRing) Has(id string) bool { _, ok := r.aeads[id]; return ok }

// Wrap seals dataKey by the newest master key (a random nonce: a master
// key wraps few keys, and each only once per rekey).
func (r *FileRing) Wrap(_ context.Context, conv string, dataKey []byte) (Wrapped, error) {
	id := r.Newest()
	a := r.aeads[id]
	nonce := make([]byte, a.NonceSize(), a.NonceSize()+len(dataKey)+a.Overhead())
	if _, err := rand.Read(nonce); err != nil {
		return Wrapped{}, fmt.Errorf("wrap data key of %s: %w", conv, err)
	}
	return Wrapped{MasterID: id, Blob: a.Seal(nonce, nonce, dataKey, wrapAAD(conv))}, nil
}

// Unwrap opens a data key wrapped by any master key of the ring.
func (r *FileRing) Unwrap(_ context.Context, conv string, w Wrapped) ([]byte, error) {
	a, ok := r.aeads[w.MasterID]
	if !ok {
		return nil, fmt.Errorf("unwrap data key of %s: %q: %w", conv, w.MasterID, ErrUnknownMasterKey)
	}
	if len(w.Blob) < a.NonceSize()+a.Overhead() {
		return nil, fmt.Errorf("unwrap data key of %s: %d bytes is too short", conv, len(w.Blob))
	}
	ns := a.NonceSize()
	key, err := a.Open(nil, w.Blob[:ns], w.Blob[ns:], wrapAAD(conv))
	if err != nil {
		return nil, fmt.Errorf("unwrap data key of %s with master key %q (wrong key?): %w", conv, w.MasterID, err)
	}
	return key, nil
}

func wrapAAD(conv string) []byte { return []byte("offlinebox data key\x00" + conv) }

func newAEAD(key []byte) (cipher.AEAD, error) {
	b, err := aes.NewCipher(key)
	if err != nil {
		return nil, err
	}
	return cipher.NewGCM(b)
}
