package readpath

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// The mention lane of a sync answer is bounded like everything else in
// it: the pending mentions, newest first, as many as fit, the rest paged.
//
// A mention is pending for a device while it lies above the cursor the
// conversation is answered from (the request's, else the device's acked
// one) and is not read: a mention the device stored with its
// conversation's slice and acked is not sent again. The lane is filled
// after the conversations, from the room held back for it (the newest
// mentions that fit in MaxBytes/mentionShare, measured) and whatever the
// conversations left, and a mention the answer's slice of its
// conversation carries is not repeated in it. A page that could not hold every pending mention says
// so (SyncResult.MentionsMore) and names where it stopped
// (SyncResult.MentionsNext): a request giving it (SyncRequest.MentionsAfter)
// continues the lane after it. A client that never pages the lane loses
// nothing: each answer's conversations make progress, and a mention at or
// below an acked cursor is in the device's slice or in a gap it pages.

const (
	// mentionShare: the lane is held room for, before the conversations
	// are placed, of at most MaxBytes/mentionShare.
	mentionShare = 4
	// mentionWave bounds the mentions read per round trip.
	mentionWave = 32
)

// MentionMark is a place in the lane's order (newest write time first,
// then conversation, then seq, highest first): where a page stopped.
type MentionMark struct {
	TS   int64
	Conv string
	Seq  uint64
}

// String is the mark as the API hands it to a client, to give back as is.
func (m MentionMark) String() string {
	return strconv.FormatInt(m.TS, 10) + ":" + strconv.FormatUint(m.Seq, 10) + ":" + m.Conv
}

// ErrBadMentionMark is a mark that is not one String made.
var ErrBadMentionMark = errors.New("not a mention mark this server gave")

// ParseMentionMark reads a mark String made.
func ParseMentionMark(s string) (MentionMark, error) {
	parts := strings.SplitN(s, ":", 3)
	if len(parts) != 3 || parts[2] == "" {
		return MentionMark{}, ErrBadMentionMark
	}
	ts, err1 := strconv.ParseInt(parts[0], 10, 64)
	seq, err2 := strconv.ParseUint(parts[1], 10, 64)
	if err1 != nil || err2 != nil || ts < 0 {
		return MentionMark{}, ErrBadMentionMark
	}
	return MentionMark{TS: ts, Conv: parts[2], Seq: seq}, nil
}

func (r mentionRef) mark() MentionMark { return MentionMark{TS: r.ts, Conv: r.conv, Seq: r.seq} }

// laneBefore orders the lane: newest first.
func laneBefore(a, b MentionMark) bool {
	if a.TS != b.TS {
		return a.TS > b.TS
	}
	if a.Conv != b.Conv {
		return a.Conv < b.Conv
	}
	return a.Seq > b.Seq
}

// sortLane puts refs in lane order and drops those up to after.
func sortLane(refs []mentionRef, after *MentionMark) []mentionRef {
	sort.Slice(refs, func(i, j int) bool { return laneBefore(refs[i].mark(), refs[j].mark()) })
	if after == nil {
		return refs
	}
	i := sort.Search(len(refs), func(i int) bool { return laneBefore(*after, refs[i].mark()) })
	return refs[i:]
}

// laneEntry is one mention of the lane as read: its message (nil when it
// left the window, or the user may not read it) and its size.
type laneEntry struct {
	msg  SyncMention
	size int
}

// laneReader reads the lane's messages in order, a wave per round trip,
// as far as they are asked for.
type laneReader struct {
	s    *Reader
	req  SyncRequest
	refs []mentionRef
	got  []laneEntry
}

// entry is refs[i] as read.
func (l *laneReader) entry(ctx context.Context, i int) (laneEntry, error) {
	for i >= len(l.got) {
		wave := l.refs[len(l.got):min(len(l.got)+mentionWave, len(l.refs))]
		qs := make([]rangeQuery, len(wave))
		for j, r := range wave {
			qs[j] = rangeQuery{conv: r.conv, lo: r.seq - 1, hi: r.seq + 1, limit: 1}
		}
		callCtx, cancel := context.WithTimeout(ctx, l.s.cfg.CallTimeout)
		sls, err := l.s.readSlices(callCtx, l.req.User, qs)
		cancel()
		if err != nil {
			return laneEntry{}, fmt.Errorf("sync %s: read mentions: %w", l.req.User, err)
		}
		for j, sl := range sls {
			var e laneEntry
			if sl.member && len(sl.entries) == 1 {
				e.msg = SyncMention{Conv: wave[j].conv, All: wave[j].all, Message: sl.entries[0]}
				e.size = l.req.Sizer.Mention(e.msg)
			}
			l.got = append(l.got, e)
		}
	}
	return l.got[i], nil
}

// reserve holds back room for the lane while the conversations are
// placed: the newest mentions that fit in MaxBytes/mentionShare, measured,
// each given back if a slice carries it.
func (l *laneReader) reserve(ctx context.Context, b *syncBudget) error {
	room := l.req.MaxBytes / mentionShare
	b.laneHeld = map[laneKey]int{}
	for i, r := range l.refs {
		e, err := l.entry(ctx, i)
		if err != nil {
			return err
		}
		if b.lane+e.size > room {
			break
		}
		if e.size > 0 {
			b.lane += e.size
			b.laneHeld[laneKey{r.conv, r.seq}] = e.size
		}
	}
	return nil
}

// sliced is the seqs each conversation block of the answer carries.
func sliced(res *SyncResult) map[string][2]uint64 {
	out := make(map[string][2]uint64, len(res.Convs))
	for _, c := range res.Convs {
		if n := len(c.Messages); n > 0 {
			out[c.Conv] = [2]uint64{c.Messages[0].Seq, c.Messages[n-1].Seq}
		}
	}
	return out
}

// fill puts the pending mentions in the answer in lane order while they
// fit, leaving out those the answer's slices carry. A mention whose
// message has left the window is gone with it. The first mention is kept
// whatever its size when the answer holds nothing else, so that every
// answer makes progress.
func (l *laneReader) fill(ctx context.Context, res *SyncResult, b *syncBudget) error {
	carried := sliced(res)
	last := -1 // the last ref looked at
	for i, r := range l.refs {
		if sp, ok := carried[r.conv]; ok && r.seq >= sp[0] && r.seq <= sp[1] {
			last = i
			continue
		}
		e, err := l.entry(ctx, i)
		if err != nil {
			return err
		}
		if e.msg.Message != nil && !b.fits(e.size) {
			if len(res.Mentions) > 0 || len(res.Convs) > 0 || len(res.Summaries) > 0 {
				l.stopAfter(res, last)
				return nil
			}
			b.force(e.size)
		}
		if e.msg.Message != nil {
			res.Mentions = append(res.Mentions, e.msg)
		}
		last = i
	}
	return nil
}

// stopAfter records that the page ends after refs[last] (-1: before the
// first).
func (l *laneReader) stopAfter(res *SyncResult, last int) {
	res.MentionsMore = true
	if last >= 0 {
		m := l.refs[last].mark()
		res.MentionsNext = &m
		return
	}
	// Just before the first ref in lane order: the same write time and
	// conversation, one seq above.
	first := l.refs[0].mark()
	res.MentionsNext = &MentionMark{TS: first.TS, Conv: first.Conv, Seq: first.Seq + 1}
}
