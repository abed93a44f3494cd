package redisstore

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/redis/go-redis/v9"

	"github.com/offlinebox/offlinebox/schemas"
)

var (
	//go:embed lua/sequence.lua
	sequenceLua    string
	sequenceScript = redis.NewScript(fenceLibLua + dedupeLibLua + sequenceLua)
)

// SequencePreviewBytes bounds the preview text kept in a conversation's meta.
const SequencePreviewBytes = 120

// SeqStatus says what sequencing did with one record.
type SeqStatus int

// Outcomes of sequencing one record.
const (
	// SeqNew: the record got a new seq and its entry was appended.
	SeqNew SeqStatus = iota
	// SeqDuplicate: its client_msg_id was seen before; Sequenced is the
	// original entry (nil when that entry already expired).
	SeqDuplicate
	// SeqRejected: the record contradicts the conversation, or the
	// group's authority refused it (Reason says how); nothing changed.
	SeqRejected
	// SeqRaced: bodies are sealed and another writer kept sequencing the
	// conversation past the bounds of retrying (Reason wraps
	// ErrSealRaced); nothing changed for the record.
	SeqRaced
	// SeqFailed: the record can never be handled, and nothing changed for
	// it (Reason says why): on the sealed path, a later call of the batch
	// failed for good after earlier records got their seqs (those keep
	// theirs; Seq is 0); or the record is a duplicate of Seq whose stored
	// entry cannot be decoded.
	SeqFailed
	// seqNotDone: an earlier record of the call was mispredicted (sealed
	// path); the record was not looked at. Never returned by Sequence.
	seqNotDone
)

// SequencedItem is the outcome for one record, in input order.
type SequencedItem struct {
	Status SeqStatus
	// Seq is the record's seq (new or original; 0 when rejected). A
	// duplicate of an entry expiry already removed has its Seq but no
	// Sequenced.
	Seq       uint64
	Sequenced *schemas.Sequenced
	// Reason is set for SeqRejected (a *schemas.InvalidError), SeqRaced
	// and SeqFailed.
	Reason error
}

// SequenceResult is what one Sequence call returns.
type SequenceResult struct {
	Epoch uint64
	// LargeFrom is the seq from which the group is large (0: not large).
	LargeFrom uint64
	// LargeConverted: every member's inbox was switched to the large-group
	// form (see MarkLargeConverted).
	LargeConverted bool
	// MemberCount after the batch.
	MemberCount int
	// Members maps member → seq of the record that made them a member,
	// after the batch. Nil once the group is large (use MemberSeqs). Read
	// only: it may be the map an earlier call answered.
	Members map[string]uint64
	// MemberSeqs holds the member seq of each probed user who is a member.
	MemberSeqs map[string]uint64
	Items      []SequencedItem

	counter      uint64 // the conversation's last seq after the call
	mver         uint64 // the conversation's membership version after the call
	membersKnown bool   // Members is the list the call named, unchanged
}

// Sequence gives msgs, all of conversation conv and in order, their seqs in
// one atomic step (see lua/sequence.lua): dedupe by client_msg_id, seq
// allocation, timeline append and membership changes. The result reports
// the member seqs of the probe users. writeMS is the caller's clock.
//
// With a Sealer configured, bodies are sealed before they reach Redis, for
// the seqs they are predicted to get (see sequenceSealed); the Sequenced
// records of the result carry the sealed bodies.
func (s *Store) Sequence(ctx context.Context, conv string, msgs []*schemas.Message, probes []string, writeMS int64) (*SequenceResult, error) {
	if len(msgs) == 0 {
		return &SequenceResult{}, nil
	}
	if s.cfg.Sealer != nil {
		return s.sequenceSealed(ctx, conv, msgs, probes, writeMS)
	}
	res, err := s.runSequence(ctx, conv, msgs, nil, probes, writeMS, nil)
	if err != nil {
		return nil, fmt.Errorf("sequence %s: %w", conv, err)
	}
	return res, nil
}

// runSequence runs the script once. previews (nil: taken from the bodies)
// and seal (nil: bodies in the clear) are the sealed path's.
func (s *Store) runSequence(ctx context.Context, conv string, msgs []*schemas.Message, previews []string, probes []string,
	writeMS int64, seal []any) (*SequenceResult, error) {
	fence := s.fenceArg()
	known, token := s.memberLists.known(conv, fence)
	args, err := s.sequenceArgs(msgs, previews, probes, writeMS, seal, token, fence)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, s.cfg.CallTimeout)
	defer cancel()
	digs := make([]string, len(msgs))
	for i, m := range msgs {
		digs[i] = s.digest(m.GetClientMsgId())
	}
	var raw []any
	for try := range dedupeTries {
		var keys []string
		var full, empty int
		if keys, full, empty, err = s.sequenceKeys(ctx, conv, writeMS, digs, try > 0); err != nil {
			return nil, err
		}
		args[len(args)-4], args[len(args)-3] = full, empty
		if raw, err = sequenceScript.Run(ctx, s.rdb, keys, args...).Slice(); !redis.HasErrorPrefix(err, refusalDedupe) {
			break
		}
	}
	if err != nil {
		return nil, fenced(err)
	}
	res, err := parseSequenceReply(raw, conv, len(msgs), probes, known)
	if errors.Is(err, errMembersNotKnown) {
		// The script wrote: the batch is retried and finds its records
		// again, the hash read in full.
		s.memberLists.keep(conv, fence, 0, 0, nil)
	}
	if err != nil {
		return nil, err
	}
	if !res.membersKnown {
		s.memberLists.keep(conv, fence, res.Epoch, res.mver, res.Members)
	}
	for i, it := range res.Items {
		if it.Status == SeqNew {
			it.Sequenced.Message, it.Sequenced.Epoch, it.Sequenced.WriteTimeMs = msgs[i], res.Epoch, writeMS
		}
	}
	return res, nil
}

func (s *Store) DedupeDays() int64 {
	return int64((s.cfg.DedupeWindow + 24*time.Hour - 1) / (24 * time.Hour))
}

// sequenceKeys lists the conversation's keys: bucket 0 of today and of
// the window's older days that hold ids, newest first (full of them; the
// older days as a call read them before unless fresh, see dedupeWindows),
// bucket 0 of the window's empty days (empty of them: the script checks
// they still are with one EXISTS instead of reading each), then the full
// days' other keys that looking up digs and adding them to today may
// touch (as the days are now), then the receipt cursors (a leave takes the
// member out of them), and last the group's notice seqs.
func (s *Store) sequenceKeys(ctx context.Context, conv string, writeMS int64, digs []string,
	fresh bool) (keys []string, full, empty int, err error) {
	k := s.keys
	keys = []string{k.ConvMeta(conv), k.Timeline(conv), k.Members(conv), k.MentionAll(conv), k.Roles(conv), k.PastMembers(conv),
		k.Held(conv)}
	state, err := s.dedupeWindow(ctx, conv, DayOf(writeMS), fresh)
	if err != nil {
		return nil, 0, 0, err
	}
	var held, none []dedupeDay
	for i, st := range state {
		if i == 0 || !st.empty() {
			held = append(held, st)
		} else {
			none = append(none, st)
		}
	}
	for _, st := range held {
		keys = append(keys, k.Dedupe(conv, st.day))
	}
	for _, st := range none {
		keys = append(keys, k.Dedupe(conv, st.day))
	}
	for i, st := range held {
		keys = append(keys, dedupeKeys(k, conv, st, digs, i == 0)...)
	}
	keys = append(keys, k.Pushed(conv), k.Delivered(conv), k.ReadBy(conv), k.Notices(conv))
	return keys, len(held), len(none), nil
}

// dedupeWindow reads the state of conv's dedupe days ending with today,
// newest first: today's, and the older days' as a call read them before
// (unless fresh) or all of them.
func (s *Store) dedupeWindow(ctx context.Context, conv string, today int64, fresh bool) ([]dedupeDay, error) {
	if fresh {
		s.dedupeWindows.forget(conv)
	} else if older, ok := s.dedupeWindows.older(conv, today); ok {
		state, err := s.readDedupeDays(ctx, conv, []int64{today})
		if err != nil {
			return nil, err
		}
		return append(state, older...), nil
	}
	var days []int64
	for d := today; d >= today-s.DedupeDays(); d-- {
		days = append(days, d)
	}
	state, err := s.readDedupeDays(ctx, conv, days)
	if err != nil {
		return nil, err
	}
	s.dedupeWindows.keep(conv, today, state[1:])
	return state, nil
}

// sequenceArgs are the script's arguments; fence is the one the member
// list token was taken with, so that the two agree.
func (s *Store) sequenceArgs(msgs []*schemas.Message, previews []string, probes []string, writeMS int64, seal []any,
	knownMembers, fence string) ([]any, error) {
	args := make([]any, 0, 9+len(probes)+12*len(msgs)+len(seal))
	args = append(args, writeMS, s.cfg.LargeGroupThreshold, s.dedupeExpireAt(DayOf(writeMS)), len(msgs), len(probes))
	for _, p := range probes {
		args = append(args, p)
	}
	for i, m := range msgs {
		preview := ""
		if previews != nil {
			preview = previews[i]
		} else if m.GetKind() == schemas.Kind_KIND_MESSAGE {
			preview = sequencePreview(m)
		}
		body, err := entryBody(m)
		if err != nil {
			return nil, fmt.Errorf("encode %s: %w", m.GetClientMsgId(), err)
		}
		args = append(args, m.GetClientMsgId(), s.digest(m.GetClientMsgId()), TypeCode(m.GetConvType()), kindCode(m.GetKind()),
			boolCode(m.GetMentionAll()), m.GetSender(), strings.Join(m.GetRecipients(), "\n"),
			preview, body, roleCode(m.GetRole()), authorityCode(m.GetAuthority()))
	}
	// the sealing arguments go before the tags: the script reads those last
	args = append(args, seal...)
	for _, m := range msgs {
		args = append(args, m.GetTag())
	}
	// the script's day counts, set per call by runSequence (sequenceKeys)
	return append(args, 0, 0, knownMembers, fence), nil
}

func kindCode(k schemas.Kind) string {
	switch k {
	case schemas.Kind_KIND_MEMBER_JOIN:
		return "j"
	case schemas.Kind_KIND_MEMBER_LEAVE:
		return "l"
	}
	return "m"
}

// roleCode is the role a join gives, as the sequencing script spells it.
func roleCode(r schemas.Role) string {
	switch r {
	case schemas.Role_ROLE_MEMBER:
		return "m"
	case schemas.Role_ROLE_ADMIN:
		return "a"
	case schemas.Role_ROLE_OWNER:
		return "o"
	}
	return ""
}

func authorityCode(a schemas.Authority) string {
	if a == schemas.Authority_AUTHORITY_SYSTEM {
		return "s"
	}
	return "u"
}

func boolCode(b bool) string {
	if b {
		return "1"
	}
	return "0"
}

// sequencePreview is the start of a text body, cut at a rune boundary;
// other content types, and sealed bodies, have no preview text (the
// sealed path seals the preview of the plaintext instead). A clear text
// never starts with the mark of a sealed preview.
func sequencePreview(m *schemas.Message) string {
	ct := m.GetContentType()
	if ct != "" && !strings.HasPrefix(ct, "text/") || m.GetSealedEpoch() != 0 {
		return ""
	}
	b := m.GetBody()
	if len(b) > SequencePreviewBytes {
		b = b[:SequencePreviewBytes]
	}
	for len(b) > 0 && !utf8.Valid(b) {
		b = b[:len(b)-1]
	}
	return strings.TrimPrefix(string(b), sealedPreviewMark)
}

var errSequenceReply = errors.New("unexpected reply of the sequence script")

// membersUnchanged is the script's answer in place of the member hash
// when the caller's list (known) is of the conversation's (epoch, mver).
const membersUnchanged = "="

// errMembersNotKnown: the script answered membersUnchanged for a list the
// caller does not hold. Not ErrMalformedReply: the call wrote, so its
// records must not be given up as unsequenced.
var errMembersNotKnown = errors.New("the sequence script answered members unchanged for a list not held")

func parseSequenceReply(raw []any, conv string, n int, probes []string, known memberList) (*SequenceResult, error) {
	if len(raw) != 4+3*n+4 {
		return nil, fmt.Errorf("%w: %d elements for %d records", errSequenceReply, len(raw), n)
	}
	res := &SequenceResult{
		Epoch:          readReplyUint(raw[0]),
		LargeFrom:      readReplyUint(raw[1]),
		LargeConverted: readReplyUint(raw[2]) == 1,
		MemberCount:    int(readReplyUint(raw[3])),
		Items:          make([]SequencedItem, n),
	}
	for i := range n {
		st, seq, data := readReplyUint(raw[4+3*i]), readReplyUint(raw[5+3*i]), readReplyString(raw[6+3*i])
		it := &res.Items[i]
		if st != seqStatusRejected {
			it.Seq = seq
		}
		switch st {
		case seqStatusNew:
			it.Status, it.Sequenced = SeqNew, &schemas.Sequenced{Seq: seq}
		case seqStatusNotDone:
			it.Status = seqNotDone
		case seqStatusDuplicate:
			it.Status = SeqDuplicate
			if data != "" {
				sq, err := DecodeEntry([]byte(data), conv, res.Epoch)
				if err != nil {
					// The stored entry will not decode on any retry: the
					// record alone fails, the rest of the batch goes on.
					it.Status, it.Reason = SeqFailed, fmt.Errorf(
						"duplicate of seq %d of %s, whose stored entry cannot be decoded: %w", seq, conv, err)
					continue
				}
				it.Sequenced = sq
			}
		default:
			field, reason, _ := strings.Cut(data, "|")
			it.Status, it.Reason = SeqRejected, &schemas.InvalidError{Field: field, Reason: reason}
		}
	}
	res.counter, res.mver = readReplyUint(raw[6+3*n]), readReplyUint(raw[7+3*n])
	switch flat, _ := raw[4+3*n].([]any); {
	case res.LargeFrom > 0:
	case readReplyString(raw[4+3*n]) == membersUnchanged:
		if known.members == nil || known.epoch != res.Epoch || known.mver != res.mver {
			return nil, fmt.Errorf("%w: at %d:%d, the list held is of %d:%d", errMembersNotKnown,
				res.Epoch, res.mver, known.epoch, known.mver)
		}
		res.Members, res.membersKnown = known.members, true
	default:
		res.Members = make(map[string]uint64, len(flat)/2)
		for i := 0; i+1 < len(flat); i += 2 {
			res.Members[readReplyString(flat[i])] = readReplyUint((flat[i+1]))
		}
	}
	seqs, _ := raw[5+3*n].([]any)
	res.MemberSeqs = make(map[string]uint64, len(probes))
	for i, u := range probes {
		if i < len(seqs) && readReplyString(seqs[i]) != "" {
			res.MemberSeqs[u] = readReplyUint((seqs[i]))
		}
	}
	return res, nil
}
