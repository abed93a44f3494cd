package readpath

import (
	"context"
	"fmt"
	"sync"

	"github.com/redis/go-redis/v9"

	"github.com/offlinebox/offlinebox/redisstore"
)

// A small group's members, read once for all its members' syncs. Every
// sync reads, per conversation, the user's join seq and former spans
// (readSyncHeads): two commands per group per sync, on the same two hashes
// for every member who reconnects.
//
// The member and former-member hashes change only in the sequencing
// script, and every change there raises the meta's `mver` in the same
// script (a rebuild starts another epoch). So while (epoch, mver) stays
// what it was, so do both hashes: a copy of them taken at (epoch, mver)
// answers the membership of anyone, as Redis would, to a sync whose meta
// read (in the heads pipeline, where it costs one field more) shows that
// same (epoch, mver).
//
// The copy is taken in the heads pipeline of a sync that found none, by
// one sync at a time per group: the meta first, then a scan of each hash
// bounded to maxMembersCopied, then epoch and mver again; equal on both
// sides, nothing changed the hashes in between. A sync whose meta shows
// another (epoch, mver) reads the user's fields in a second pipeline and
// the copy is dropped.

// The copies kept: of small groups only (a direct conversation has no
// one else to share its copy with, a large group too many members), of at
// most maxMembersCopied members and former members each, maxMemberCopies
// groups and maxMembersKept entries in all.
const (
	maxMembersCopied = 2048
	maxMemberCopies  = 1024
	maxMembersKept   = 1 << 18
)

// memberCopy is a group's member and former-member hashes at (epoch,
// mver).
type memberCopy struct {
	epoch, mver uint64
	joined      map[string]string // members: user → join seq
	past        map[string]string // former members: user → spans
}

func (c *memberCopy) size() int { return len(c.joined) + len(c.past) }

// current reports whether the copy is of the meta's epoch and mver as
// read (replies; a nil epoch: no meta).
func (c *memberCopy) current(epoch, mver any) bool {
	return epoch != nil && redisstore.ReplyUint(epoch) == c.epoch && redisstore.ReplyUint(mver) == c.mver
}

// memberCopies are the copies, by conversation, and the groups a sync is
// taking a copy of.
type memberCopies struct {
	mu     sync.Mutex
	copies *redisstore.Bounded[*memberCopy] // weight: entries
	taking map[string]bool
}

func newMemberCopies() *memberCopies {
	return &memberCopies{copies: redisstore.NewBounded[*memberCopy](maxMemberCopies, maxMembersKept), taking: map[string]bool{}}
}

// get is conv's copy, nil without one.
func (n *memberCopies) get(conv string) *memberCopy {
	n.mu.Lock()
	defer n.mu.Unlock()
	c, _ := n.copies.Get(conv)
	return c
}

// use is conv's copy; without one, take reports whether the caller is to
// take it (no other sync is).
func (n *memberCopies) use(conv string) (c *memberCopy, take bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if c, _ := n.copies.Get(conv); c != nil {
		return c, false
	}
	if n.taking[conv] {
		return nil, false
	}
	n.taking[conv] = true
	return nil, true
}

// took ends a take of conv, keeping c unless it is nil.
func (n *memberCopies) took(conv string, c *memberCopy) {
	n.mu.Lock()
	defer n.mu.Unlock()
	delete(n.taking, conv)
	if c == nil {
		return
	}
	n.copies.Put(conv, c, c.size())
}

// drop forgets conv's copy c, one its group outlived.
func (n *memberCopies) drop(conv string, c *memberCopy) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if kept, _ := n.copies.Get(conv); kept == c {
		n.copies.Remove(conv)
	}
}

// memberRead is one conversation's membership read in a heads pipeline:
// from a copy (from), or the user's fields (joined, past), with the reads
// that take a copy (mem, former, again) when this sync takes it.
type memberRead struct {
	from         *memberCopy
	joined, past *redis.StringCmd
	mem, former  *redis.ScanCmd
	again        *redis.SliceCmd
}

// queueMembership queues on p what the heads read of user's membership in
// conv, after the conversation's meta read (which reads mver too); small
// says whether conv is a small group.
func (s *Reader) queueMembership(ctx context.Context, p redis.Pipeliner, conv, user string, small bool) *memberRead {
	r := &memberRead{}
	take := false
	if small {
		if r.from, take = s.members.use(conv); r.from != nil {
			return r
		}
	}
	r.joined = p.HGet(ctx, s.keys.Members(conv), user)
	r.past = p.HGet(ctx, s.keys.PastMembers(conv), user)
	if take {
		r.mem = p.HScan(ctx, s.keys.Members(conv), 0, "", maxMembersCopied)
		r.former = p.HScan(ctx, s.keys.PastMembers(conv), 0, "", maxMembersCopied)
		r.again = p.HMGet(ctx, s.keys.ConvMeta(conv), redisstore.MetaEpoch, redisstore.MetaMemberVersion)
	}
	return r
}

// membership is the user's join seq (ok false: not a member) and former
// spans once the pipeline ran, epoch and mver being the meta read's
// (nil: absent). settled is false when the copy used is of another
// (epoch, mver): the caller reads the user's fields again. A copy this
// read took is kept.
func (s *Reader) membership(conv, user string, r *memberRead, epoch, mver any) (joined string, member bool, past string, settled bool, err error) {
	if c := r.from; c != nil {
		if !c.current(epoch, mver) {
			s.members.drop(conv, c)
			return "", false, "", false, nil
		}
		joined, member = c.joined[user]
		return joined, member, c.past[user], true, nil
	}
	if r.mem != nil {
		s.members.took(conv, takenCopy(r, epoch, mver))
		r.mem = nil
	}
	joined, jerr := r.joined.Result()
	if jerr != nil && jerr != redis.Nil {
		return "", false, "", false, fmt.Errorf("membership of %s: %w", conv, jerr)
	}
	past, perr := r.past.Result()
	if perr != nil && perr != redis.Nil {
		return "", false, "", false, fmt.Errorf("former membership of %s: %w", conv, perr)
	}
	return joined, jerr == nil, past, true, nil
}

// abandonTakes ends the takes of reads that did not get to keep their
// copy (a sync that failed first).
func (s *Reader) abandonTakes(convs []string, reads []*memberRead) {
	for i, r := range reads {
		if r != nil && r.mem != nil {
			s.members.took(convs[i], nil)
			r.mem = nil
		}
	}
}

// takenCopy is the copy r's scans read, or nil if they cannot stand for
// (epoch, mver): a hash too large for one bounded scan, or a meta that
// changed between the reads.
func takenCopy(r *memberRead, epoch, mver any) *memberCopy {
	if epoch == nil || r.mem.Err() != nil || r.former.Err() != nil || r.again.Err() != nil {
		return nil
	}
	again := r.again.Val()
	c := &memberCopy{epoch: redisstore.ReplyUint(epoch), mver: redisstore.ReplyUint(mver)}
	if again[0] == nil || redisstore.ReplyUint(again[0]) != c.epoch || redisstore.ReplyUint(again[1]) != c.mver {
		return nil
	}
	var ok bool
	if c.joined, ok = scannedHash(r.mem); !ok {
		return nil
	}
	if c.past, ok = scannedHash(r.former); !ok {
		return nil
	}
	return c
}

// scannedHash is the hash one HSCAN read whole (ok false: it did not end).
func scannedHash(cmd *redis.ScanCmd) (map[string]string, bool) {
	kv, cursor := cmd.Val()
	if cursor != 0 || len(kv)%2 != 0 || len(kv)/2 > maxMembersCopied {
		return nil, false
	}
	out := make(map[string]string, len(kv)/2)
	for i := 0; i < len(kv); i += 2 {
		out[kv[i]] = kv[i+1]
	}
	return out, true
}

// rereadMembership reads, in one pipeline, the user's fields of the
// conversations whose copy their meta outlived (again).
func (s *Reader) rereadMembership(ctx context.Context, convs []string, user string, reads []*memberRead, again []int) error {
	_, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for _, i := range again {
			reads[i] = &memberRead{joined: p.HGet(ctx, s.keys.Members(convs[i]), user), past: p.HGet(ctx, s.keys.PastMembers(convs[i]), user)}
		}
		return nil
	})
	if err != nil && err != redis.Nil {
		return fmt.Errorf("read membership of %s in %d conversations: %w", user, len(again), err)
	}
	return nil
}
