package edge

import (
	"context"

	"github.com/offlinebox/offlinebox/redisstore"
)

// Message states as a sender is shown them.
const (
	StateStored    = "stored"
	StatePushed    = "pushed"
	StateDelivered = "delivered"
	StateRead      = "read"
)

// StateOf is the furthest any recipient got: read, delivered (a device
// stored it), pushed (a live connection was written it, not yet acked),
// else stored.
func StateOf(n redisstore.ReceiptCounts) string {
	switch {
	case n.Read > 0:
		return StateRead
	case n.Delivered > 0:
		return StateDelivered
	case n.Pushed > 0:
		return StatePushed
	}
	return StateStored
}

// PeerOf is the other participant of a direct conversation.
func PeerOf(ctx context.Context, st *redisstore.Store, conv, user string) (string, error) {
	mem, err := st.Members(ctx, conv)
	if err != nil {
		return "", err
	}
	for m := range mem {
		if m != user {
			return m, nil
		}
	}
	return "", nil
}
