package redisstore

import (
	"context"
	_ "embed"
	"errors"
	"fmt"

	"github.com/redis/go-redis/v9"
)

var (
	//go:embed lua/receipts_lib.lua
	receiptsLibLua string
	//go:embed lua/receipts_raise.lua
	receiptsRaiseLua    string
	receiptsRaiseScript = redis.NewScript(receiptsLibLua + receiptsRaiseLua)
	//go:embed lua/receipts_count.lua
	receiptsCountLua    string
	receiptsCountScript = redis.NewScript(receiptsCountLua)
)

// Receipt cursor kinds.
const (
	ReceiptPushed    = 'p'
	ReceiptDelivered = 'd'
	ReceiptRead      = 'r'
)

// ReceiptMark raises one member's cursor of one conversation.
type ReceiptMark struct {
	Conv   string
	Epoch  uint64
	Member string
	Seq    uint64
}

// RaisedReceipt says what a mark did.
type RaisedReceipt struct {
	ReceiptMark
	// Raised: the cursor rose from Prev to Seq.
	Raised bool
	Prev   uint64
}

// RaiseReceipts raises members' pushed (kind ReceiptPushed), delivered
// (ReceiptDelivered) or read cursors (see lua/receipts_raise.lua): the conversations whose keys share
// a hash slot in one script call (all of them on a standalone server),
// every call in one pipeline. Marks of a stale epoch change nothing.
func (s *Store) RaiseReceipts(ctx context.Context, kind byte, marks []ReceiptMark) ([]RaisedReceipt, error) {
	if len(marks) == 0 {
		return nil, nil
	}
	rc := s.raiseCalls(kind, marks)
	ctx, cancel := context.WithTimeout(ctx, s.cfg.CallTimeout)
	defer cancel()
	cmds, err := s.evalPiped(ctx, receiptsRaiseScript, rc.calls)
	if err != nil {
		return nil, fmt.Errorf("raise receipts of %d conversations: %w", rc.convs, err)
	}
	return rc.parse(marks, cmds)
}

// receiptMarksPerCall bounds the marks of one receipts script call (a
// conversation's marks are never split): a call runs alone on its
// server, and the live channel raises thousands of marks in one batch.
const receiptMarksPerCall = 512

// raising is the script calls of a RaiseReceipts: each call raises the
// marks of its conversations (one per conversation and epoch), and idx
// says which marks each conversation of each call carries.
type raising struct {
	calls []scriptCall
	idx   [][][]int // call → conversation → indexes of marks
	convs int
}

func (s *Store) raiseCalls(kind byte, marks []ReceiptMark) raising {
	type ce struct {
		conv  string
		epoch uint64
	}
	var order []ce
	var of [][]int // per conversation and epoch, its marks
	at := map[ce]int{}
	for i, m := range marks {
		k := ce{m.Conv, m.Epoch}
		j, ok := at[k]
		if !ok {
			j = len(order)
			at[k] = j
			order = append(order, k)
			of = append(of, nil)
		}
		of[j] = append(of[j], i)
	}
	groups := s.slotCalls(len(order), receiptMarksPerCall, func(j int) int { return len(of[j]) },
		func(j int) string { return s.keys.ConvMeta(order[j].conv) })
	r := raising{calls: make([]scriptCall, len(groups)), idx: make([][][]int, len(groups)), convs: len(order)}
	for g, js := range groups {
		n := 0
		for _, j := range js {
			n += len(of[j])
		}
		keys := make([]string, 0, 6*len(js))
		args := make([]any, 0, 1+2*len(js)+2*n)
		args = append(args, string(kind))
		for _, j := range js {
			c := order[j].conv
			keys = append(keys, s.keys.ConvMeta(c), s.keys.Delivered(c), s.keys.ReadBy(c), s.keys.ReceiptEpoch(c), s.keys.Members(c), s.keys.Pushed(c))
			args = append(args, order[j].epoch, len(of[j]))
			for _, i := range of[j] {
				args = append(args, marks[i].Member, marks[i].Seq)
			}
			r.idx[g] = append(r.idx[g], of[j])
		}
		r.calls[g] = scriptCall{keys: keys, args: args}
	}
	return r
}

// parse reads each call's answer: per conversation, a {raised, prev} pair
// per mark.
func (r raising) parse(marks []ReceiptMark, cmds []*redis.Cmd) ([]RaisedReceipt, error) {
	out := make([]RaisedReceipt, len(marks))
	for i := range marks {
		out[i] = RaisedReceipt{ReceiptMark: marks[i]}
	}
	for g, c := range cmds {
		vals, err := c.Slice()
		if err != nil {
			return nil, fmt.Errorf("raise receipts: %w", err)
		}
		if len(vals) != len(r.idx[g]) {
			return nil, fmt.Errorf("raise receipts: script answered %d conversations for %d", len(vals), len(r.idx[g]))
		}
		for k, conv := range r.idx[g] {
			pairs, _ := vals[k].([]any)
			for n, i := range conv {
				if n < len(pairs) {
					if pair, ok := pairs[n].([]any); ok && len(pair) == 2 {
						out[i].Raised = readReplyUint(pair[0]) == 1
						out[i].Prev = readReplyUint(pair[1])
					}
				}
			}
		}
	}
	return out, nil
}

// AckAndRaise is AckDevice and RaiseReceipts(ReceiptDelivered) in one
// round trip: the device's cursors in one script on the user's slot, the
// members' cursors in the receipt calls of RaiseReceipts, one pipeline. Both are
// idempotent, so a failure of either is retried whole by the caller. s
// must hold both the user's keys and the conversations'.
func (s *Store) AckAndRaise(ctx context.Context, user, device string, items []AckItem, nowMS int64, marks []ReceiptMark) (AckResult, []RaisedReceipt, error) {
	ctx, cancel := context.WithTimeout(ctx, s.cfg.CallTimeout)
	defer cancel()
	rc := s.raiseCalls(ReceiptDelivered, marks)
	var res AckResult
	var raised []RaisedReceipt
	err := s.withDeviceSet(ctx, user, -1, func(devs, cursors []string) error {
		ackKeys, ackArgs := s.ackCall(user, device, items, nowMS, devs, cursors)
		calls := append([]scriptCall{{keys: ackKeys, args: ackArgs, script: ackCursorScript}}, rc.calls...)
		all, err := s.evalPiped(ctx, receiptsRaiseScript, calls)
		if anyNoScript(all) && err != nil {
			return err // the lost scripts could not be loaded again
		}
		ack, cmds := all[0], all[1:]
		if err := ack.Err(); err != nil {
			if redis.HasErrorPrefix(err, refusalDevices) {
				// The raises of this pipeline ran: what they raised is
				// kept, as the next run finds the cursors raised already.
				if r, perr := rc.parse(marks, cmds); perr == nil {
					raised = mergeRaised(raised, r)
				}
			}
			return err // OBDEVICES: withDeviceSet reads the set again
		}
		if err != nil {
			return fmt.Errorf("raise receipts of %d conversations: %w", rc.convs, err)
		}
		vals, _ := ack.Slice()
		res = ackResultOf(vals)
		r, err := rc.parse(marks, cmds)
		raised = mergeRaised(raised, r)
		return err
	})
	if err != nil {
		return AckResult{}, nil, fmt.Errorf("ack %d conversations for %s/%s: %w", len(items), user, device, AsUserMoved(err))
	}
	return res, raised, nil
}

// mergeRaised is next with what an earlier run of the same marks raised
// (its Prev is the cursor before either run).
func mergeRaised(earlier, next []RaisedReceipt) []RaisedReceipt {
	if len(earlier) != len(next) {
		return next
	}
	for i := range next {
		if earlier[i].Raised {
			next[i] = earlier[i]
		}
	}
	return next
}

// ReceiptCounts is the receipts of one seq.
type ReceiptCounts struct {
	Epoch  uint64
	MaxSeq uint64
	// Pushed, Delivered and Read count members other than the sender
	// whose cursors are at or above the seq; Others is how many such
	// members the conversation has.
	Pushed, Delivered, Read, Others int
}

// CountReceipts answers "delivered to N of M, read by N of M" for seq,
// whose sender (empty when unknown) is left out.
func (s *Store) CountReceipts(ctx context.Context, conv string, seq uint64, sender string) (ReceiptCounts, error) {
	ctx, cancel := context.WithTimeout(ctx, s.cfg.CallTimeout)
	defer cancel()
	keys := s.countKeys(conv)
	vals, err := receiptsCountScript.Run(ctx, s.rdb, keys, seq, sender).Slice()
	if err != nil || len(vals) < 6 {
		return ReceiptCounts{}, fmt.Errorf("count receipts of %s/%d: %w", conv, seq, err)
	}
	return countsOf(vals), nil
}

func (s *Store) countKeys(conv string) []string {
	return []string{s.keys.ConvMeta(conv), s.keys.Delivered(conv), s.keys.ReadBy(conv), s.keys.ReceiptEpoch(conv),
		s.keys.Members(conv), s.keys.Pushed(conv)}
}

func countsOf(vals []any) ReceiptCounts {
	return ReceiptCounts{Epoch: readReplyUint(vals[0]), MaxSeq: readReplyUint(vals[1]),
		Delivered: int(readReplyUint(vals[2])), Read: int(readReplyUint(vals[3])), Others: int(readReplyUint(vals[4])),
		Pushed: int(readReplyUint(vals[5]))}
}

// MemberReceipts is one member's cursors.
type MemberReceipts struct{ Delivered, Read uint64 }

// ReceiptsOf reads members' cursors of several conversations (for a
// direct conversation: the peer's, as read_outbox_max_id). One pipeline.
func (s *Store) ReceiptsOf(ctx context.Context, want map[string]string) (map[string]MemberReceipts, error) {
	if len(want) == 0 {
		return nil, nil
	}
	ctx, cancel := context.WithTimeout(ctx, s.cfg.CallTimeout)
	defer cancel()
	type pair struct{ d, r *redis.FloatCmd }
	cmds := map[string]pair{}
	_, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for conv, member := range want {
			cmds[conv] = pair{p.ZScore(ctx, s.keys.Delivered(conv), member), p.ZScore(ctx, s.keys.ReadBy(conv), member)}
		}
		return nil
	})
	if err != nil && err != redis.Nil {
		return nil, fmt.Errorf("read receipts of %d conversations: %w", len(want), err)
	}
	out := make(map[string]MemberReceipts, len(want))
	for conv, c := range cmds {
		out[conv] = MemberReceipts{Delivered: uint64(c.d.Val()), Read: uint64(c.r.Val())}
	}
	return out, nil
}

// ForgetReceipts drops members who left from the conversation's cursors,
// so that "N of M" counts the members it has.
func (s *Store) ForgetReceipts(ctx context.Context, conv string, members []string) error {
	if len(members) == 0 {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, s.cfg.CallTimeout)
	defer cancel()
	ms := make([]any, len(members))
	for i, m := range members {
		ms[i] = m
	}
	_, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		p.ZRem(ctx, s.keys.Delivered(conv), ms...)
		p.ZRem(ctx, s.keys.ReadBy(conv), ms...)
		p.ZRem(ctx, s.keys.Pushed(conv), ms...)
		return nil
	})
	if err != nil {
		return fmt.Errorf("forget receipts of %d members of %s: %w", len(members), conv, err)
	}
	return nil
}

// PushAudience is what the push stage needs of a conversation.
type PushAudience struct {
	Large bool
	// Version is the membership version (meta mver): members change only
	// when it does.
	Version uint64
}

// PushAudiences reads each conversation's large flag and membership
// version: one pipelined HMGET each. A conversation whose meta can never
// be read (a key of the wrong type) is left out, and the error is then
// ItemErrors naming it by its index in convs, beside the others'.
func (s *Store) PushAudiences(ctx context.Context, convs []string) (map[string]PushAudience, error) {
	ctx, cancel := context.WithTimeout(ctx, s.cfg.CallTimeout)
	defer cancel()
	cmds := make([]*redis.SliceCmd, len(convs))
	// a failed pipeline sets every command's error: they are read below
	_, _ = s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, c := range convs {
			cmds[i] = p.HMGet(ctx, s.keys.ConvMeta(c), MetaLarge, MetaMemberVersion)
		}
		return nil
	})
	err := itemFailures(len(cmds), func(i int) error { return cmds[i].Err() }, nil,
		func(i int) string { return "read the audience of " + convs[i] })
	var failed ItemErrors
	if err != nil && !errors.As(err, &failed) {
		return nil, err
	}
	out := make(map[string]PushAudience, len(convs))
	for i, c := range convs {
		v := cmds[i].Val()
		if len(v) == 2 && failed[i] == nil {
			out[c] = PushAudience{Large: readReplyUint(v[0]) == 1, Version: readReplyUint(v[1])}
		}
	}
	return out, err
}

// PeerReceipts reads, for direct conversations, the cursors of the
// participant other than user: one pipeline whatever the count. A direct
// conversation's receipt sets hold the cursors of its two participants
// only (only members ack and read, and neither leaves), so the peer's are
// the ones that are not user's, and the peer need not be looked up first.
func (s *Store) PeerReceipts(ctx context.Context, user string, convs []string) (map[string]MemberReceipts, error) {
	if len(convs) == 0 {
		return nil, nil
	}
	ctx, cancel := context.WithTimeout(ctx, s.cfg.CallTimeout)
	defer cancel()
	type pair struct{ d, r *redis.ZSliceCmd }
	cmds := make([]pair, len(convs))
	_, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, c := range convs {
			cmds[i] = pair{p.ZRangeWithScores(ctx, s.keys.Delivered(c), 0, -1), p.ZRangeWithScores(ctx, s.keys.ReadBy(c), 0, -1)}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read peer receipts of %d conversations: %w", len(convs), err)
	}
	peer := func(zs []redis.Z) uint64 {
		for _, z := range zs {
			if m, _ := z.Member.(string); m != user {
				return uint64(z.Score)
			}
		}
		return 0
	}
	out := make(map[string]MemberReceipts, len(convs))
	for i, c := range convs {
		out[c] = MemberReceipts{Delivered: peer(cmds[i].d.Val()), Read: peer(cmds[i].r.Val())}
	}
	return out, nil
}

// ReceiptQuery asks for the receipts of one seq of a conversation.
type ReceiptQuery struct {
	Conv   string
	Seq    uint64
	Sender string
}

// CountReceiptsMany is CountReceipts for many seqs in one pipeline.
func (s *Store) CountReceiptsMany(ctx context.Context, qs []ReceiptQuery) ([]ReceiptCounts, error) {
	if len(qs) == 0 {
		return nil, nil
	}
	calls := make([]scriptCall, len(qs))
	for i, q := range qs {
		calls[i] = scriptCall{keys: s.countKeys(q.Conv), args: []any{q.Seq, q.Sender}}
	}
	ctx, cancel := context.WithTimeout(ctx, s.cfg.CallTimeout)
	defer cancel()
	cmds, err := s.evalPiped(ctx, receiptsCountScript, calls)
	if err != nil {
		return nil, fmt.Errorf("count receipts of %d seqs: %w", len(qs), err)
	}
	out := make([]ReceiptCounts, len(qs))
	for i, c := range cmds {
		vals, err := c.Slice()
		if err != nil || len(vals) < 6 {
			return nil, fmt.Errorf("count receipts of %s/%d: %w", qs[i].Conv, qs[i].Seq, err)
		}
		out[i] = countsOf(vals)
	}
	return out, nil
}
