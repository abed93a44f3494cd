package wire

// Cursor is a position in a conversation: a seq of an epoch. A sync
// request holds one per conversation the device holds (its cursors).
type Cursor struct {
	Seq   uint64 `json:"seq"`
	Epoch uint64 `json:"epoch"`
}
