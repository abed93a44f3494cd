package redisstore

// Position is a place in one conversation's timeline: every message up to
// Seq of timeline Epoch. Seqs of two epochs name different messages, so a
// Position is compared only with one of its own epoch. What a client holds
// of a conversation, a device's acked cursor and the sealed path's
// prediction of the counter are all Positions; the zero value means
// "nothing yet".
type Position struct {
	Seq   uint64
	Epoch uint64
}
