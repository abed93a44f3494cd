package readpath

import (
	"fmt"

	"github.com/offlinebox/offlinebox/schemas"

	"github.com/offlinebox/offlinebox/redisstore"
)

// SyncRequest is one catch-up request of one device.
type SyncRequest struct {
	User   string
	Device string
	// Cursors the client sent. A conversation it does not name starts from
	// the device's acked cursor, else from where the user joined.
	Cursors map[string]redisstore.Position
	// Limit is the most messages per conversation.
	Limit int
	// NowMS, when set, marks the device used at this time (unix ms), as
	// an ack does, unless it is not registered (new or evicted).
	NowMS int64
	// MaxBytes is the budget of the whole answer (sync_budget.go). Only
	// one message larger than the room left (the first conversation's
	// newest, or a first mention when nothing else is answered: progress
	// must be possible) may exceed it.
	MaxBytes int
	// MentionsAfter, when set, continues the mention lane after the mark
	// an answer gave (SyncResult.MentionsNext).
	MentionsAfter *MentionMark
	// GroupSliceBytes caps each group's slice in the first pass over the
	// conversations (sync_budget.go). 0: MaxBytes/groupSliceShare;
	// MaxBytes or more: no cap.
	GroupSliceBytes int
	Sizer           SyncSizer
}

func (r SyncRequest) validate() error {
	switch {
	case r.Limit < 1:
		return fmt.Errorf("sync %s: limit %d is below 1", r.User, r.Limit)
	case r.MaxBytes < 1:
		return fmt.Errorf("sync %s: byte budget %d is below 1", r.User, r.MaxBytes)
	case r.GroupSliceBytes < 0:
		return fmt.Errorf("sync %s: group slice cap %d is negative", r.User, r.GroupSliceBytes)
	case r.Sizer == nil:
		return fmt.Errorf("sync %s: no sizer", r.User)
	}
	return nil
}

// Rebase reasons: why a conversation's cursor means nothing to the
// answer's timeline. A cursor that is merely far behind (a long backlog,
// or messages that left the Redis window) is not rebased: the answer
// names the gap from it, marked Incomplete when part of the gap is in
// history only.
const (
	// RebaseResync: the device was evicted; none of its cursors is trusted.
	RebaseResync = "resync"
	// RebaseEpoch: the cursor is of another timeline epoch.
	RebaseEpoch = "epoch"
	// RebaseAhead: the cursor is beyond the conversation's max seq.
	RebaseAhead = "ahead"
)

// SyncMention is one pending @mention with its message.
type SyncMention struct {
	Conv string
	// All: an @all of a large group (not a personal mention).
	All     bool
	Message *schemas.Sequenced
}

// SeqRange is an inclusive range of seqs.
type SeqRange struct {
	From uint64
	To   uint64
}

// SyncConv is one conversation's slice of the answer.
type SyncConv struct {
	Conv   string
	Type   schemas.ConvType
	Large  bool
	Epoch  uint64
	MaxSeq uint64
	Unread uint64
	// Messages in ascending seq order: the newest of what the client lacks.
	Messages []*schemas.Sequenced
	// Older counts the first of Messages that the budget's second pass
	// prepended: they and the rest come from two slice reads, each of
	// which may have answered other syncs too.
	Older int
	// HasMore: the client lacks messages older than Messages[0].
	HasMore bool
	// Gap names the missing seqs between the cursor and Messages[0], to
	// page through (not set on a rebase).
	Gap *SeqRange
	// Rebase: drop the cursor and continue from Messages; what is older is
	// history. RebaseReason says why.
	Rebase       bool
	RebaseReason string
	// Incomplete: messages the client lacks are no longer in Redis; only
	// history has them.
	Incomplete bool
	// Left: the user left this group; MaxSeq is the last seq before they
	// left, and nothing after it comes.
	Left bool
}

// SyncSummary stands for a conversation with news that did not fit in the
// budget: ask again.
type SyncSummary struct {
	Conv     string
	Type     schemas.ConvType
	Large    bool
	Epoch    uint64
	MaxSeq   uint64
	Unread   uint64
	Mentions int
}

// SyncResult is the answer to one SyncRequest.
type SyncResult struct {
	// Resync: the device was evicted; every conversation is a rebase.
	Resync bool
	// Mentions: a page of the pending mentions, newest first, without
	// those the answer's slices carry (sync_mentions.go).
	Mentions []SyncMention
	// MentionsMore: pending mentions after the page did not fit; a
	// request with MentionsAfter = MentionsNext continues the lane.
	MentionsMore bool
	MentionsNext *MentionMark
	Convs        []SyncConv
	Summaries    []SyncSummary
	// Omitted counts conversations with news for which not even a summary
	// fitted.
	Omitted int
	// Bytes is the size estimate of the answer.
	Bytes int
}
