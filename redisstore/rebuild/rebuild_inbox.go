package rebuild

import (
	"context"
	"fmt"
	"github.com/offlinebox/offlinebox/redisstore"
	"strconv"

	"github.com/redis/go-redis/v9"

	"github.com/offlinebox/offlinebox/schemas"
)

// restorePage bounds the member and timeline reads of RestoreInboxEntries.
const restorePage = 500

// RestoreInboxEntries gives every member of a conversation whose inbox no
// longer names it (a Redis that evicted the user's inbox) an entry again,
// as the conversation now stands: everything up to the counter delivered
// (a large group's unread is derived from the counter),
// read up to the member's last own message in the timeline or their join
// (the read receipts the inbox held are gone with it), in the meta's epoch,
// and the conversation back in their list. Entries that exist are left as
// they are, and so are users whose keys moved to the hot store. Run it
// after the conversation was rebuilt, while nothing sequences it; it
// returns how many entries it restored.
func (s *Rebuilder) RestoreInboxEntries(ctx context.Context, conv string) (int, error) {
	var meta []any
	err := s.rebuildCall(ctx, func(ctx context.Context) error {
		var err error
		meta, err = s.rdb.HMGet(ctx, s.keys.ConvMeta(conv), redisstore.MetaSeq, redisstore.MetaEpoch, redisstore.MetaType, redisstore.MetaLarge, redisstore.MetaLastTime).Result()
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("restore inboxes of %s: read meta: %w", conv, err)
	}
	seq, _ := strconv.ParseUint(hashString(meta[0]), 10, 64)
	if seq == 0 {
		return 0, nil
	}
	form := redisstore.InboxGroup
	switch {
	case redisstore.ConvTypeOfCode(hashString(meta[2])) == schemas.ConvType_CONV_TYPE_DIRECT:
		form = redisstore.InboxDirect
	case hashString(meta[3]) == "1":
		form = redisstore.InboxLarge
	}
	own, err := s.lastOwn(ctx, conv, seq)
	if err != nil {
		return 0, err
	}
	e := restoredEntry{conv: conv, seq: seq, epoch: hashString(meta[1]), form: form, lts: hashString(meta[4])}
	n := 0
	for cursor := uint64(0); ; {
		var page []string
		err := s.rebuildCall(ctx, func(ctx context.Context) error {
			var err error
			page, cursor, err = s.rdb.HScan(ctx, s.keys.Members(conv), cursor, "*", restorePage).Result()
			return err
		})
		if err != nil {
			return n, fmt.Errorf("restore inboxes of %s: read members: %w", conv, err)
		}
		for i := 0; i+1 < len(page); i += 2 {
			joined, _ := strconv.ParseUint(page[i+1], 10, 64)
			done, err := s.restoreEntry(ctx, page[i], e, max(own[page[i]], joined), joined)
			if err != nil {
				return n, fmt.Errorf("restore inboxes of %s: %w", conv, err)
			}
			if done {
				n++
			}
		}
		if cursor == 0 {
			return n, nil
		}
	}
}

// restoredEntry is what every member's restored entry shares.
type restoredEntry struct {
	conv  string
	seq   uint64
	epoch string
	form  redisstore.InboxForm
	lts   string // the last message's write time: the list's order
}

// restoreEntry writes one user's entry unless their inbox names the
// conversation; it reports whether it wrote.
func (s *Rebuilder) restoreEntry(ctx context.Context, user string, e restoredEntry, read, joined uint64) (bool, error) {
	k := s.keys
	ib := k.Inbox(user)
	wrote := false
	err := s.rebuildCall(ctx, func(ctx context.Context) error {
		return s.rdb.Watch(ctx, func(tx *redis.Tx) error {
			loc, err := tx.HGet(ctx, k.Profile(user), redisstore.ProfileLocation).Result()
			if err != nil && err != redis.Nil {
				return err
			}
			v, err := tx.HMGet(ctx, ib, redisstore.InboxField(e.conv, redisstore.FieldLast), redisstore.InboxField(e.conv, redisstore.FieldType)).Result()
			if err != nil {
				return err
			}
			if loc == redisstore.ProfileOnHot || v[0] != nil || v[1] != nil {
				return nil
			}
			score, _ := strconv.ParseFloat(e.lts, 64)
			last := e.seq
			if e.form == redisstore.InboxLarge {
				last = 0 // a large group's unread is derived; its join leaves C:l as it was
			}
			_, err = tx.TxPipelined(ctx, func(p redis.Pipeliner) error {
				p.HSet(ctx, ib, redisstore.InboxField(e.conv, redisstore.FieldLast), last, redisstore.InboxField(e.conv, redisstore.FieldRead), min(read, e.seq),
					redisstore.InboxField(e.conv, redisstore.FieldJoined), joined, redisstore.InboxField(e.conv, redisstore.FieldType), string(rune(e.form)),
					redisstore.InboxField(e.conv, redisstore.FieldEpoch), e.epoch)
				p.ZAddNX(ctx, k.ConvList(user), redis.Z{Score: score, Member: e.conv})
				return nil
			})
			wrote = err == nil
			return err
		}, ib, k.Profile(user))
	})
	if err != nil {
		return false, fmt.Errorf("restore the inbox entry of %s: %w", user, err)
	}
	return wrote, nil
}

// lastOwn returns, per sender, the seq of their last message in the
// conversation's timeline.
func (s *Rebuilder) lastOwn(ctx context.Context, conv string, seq uint64) (map[string]uint64, error) {
	own := map[string]uint64{}
	for lo := uint64(1); lo <= seq; {
		hi := min(lo+restorePage-1, seq)
		head, entries, err := s.st.TimelineEntries(ctx, conv, lo, hi)
		if err != nil {
			return nil, fmt.Errorf("restore inboxes of %s: %w", conv, err)
		}
		for _, en := range entries {
			if en.GetMessage().GetKind() == schemas.Kind_KIND_MESSAGE {
				own[en.GetMessage().GetSender()] = en.GetSeq()
			}
		}
		lo = max(hi+1, head.First) // nothing lies below the floor
	}
	return own, nil
}
