package seal

import (
	"context"
	"fmt"
)

// Durable keeps wrapped data keys outside Redis (chstore's data_keys
// table is one): the copy a Redis that lost its keys is refilled from.
type Durable interface {
	// DataKey is conv's durable wrapped key ("" when none).
	DataKey(ctx context.Context, conv string) (string, error)
}

// Layered is a KeyStore over a primary store (Redis) and a durable copy:
// a key the primary lacks is looked up in the durable copy and put back
// into the primary, so a conversation whose key Redis lost keeps its key
// (and its history) instead of getting a new one.
type Layered struct {
	Primary KeyStore
	Durable Durable
}

// DataKey is the primary's key, else the durable one (put back).
func (l Layered) DataKey(ctx context.Context, conv string) (string, error) {
	w, err := l.Primary.DataKey(ctx, conv)
	if err != nil || w != "" || l.Durable == nil {
		return w, err
	}
	if w, err = l.Durable.DataKey(ctx, conv); err != nil {
		return "", fmt.Errorf("durable data key of %s: %w", conv, err)
	}
	if w == "" {
		return "", nil
	}
	return l.Primary.PutDataKey(ctx, conv, w)
}

// PutDataKey stores into the primary; the durable copy follows from the
// sealed records that carry the key (Sequenced.data_key).
func (l Layered) PutDataKey(ctx context.Context, conv, wrapped string) (string, error) {
	return l.Primary.PutDataKey(ctx, conv, wrapped)
}
