package redisstore

import (
	"context"
	_ "embed"
	"fmt"
	"strconv"

	"github.com/redis/go-redis/v9"
)

var (
	//go:embed lua/receipts_ack.lua
	receiptsAckLua    string
	receiptsAckScript = redis.NewScript(receiptsLibLua + receiptsAckLua)
)

// AckedConv is what a checked ack's raise read of one conversation.
type AckedConv struct {
	Epoch uint64
	Large bool
}

// RaiseAckedReceipts checks an ack of user's and raises their delivered
// cursors in one script call (lua/receipts_ack.lua): items name the
// conversation, the seq and the epoch the device named (0: none). It
// answers false, having changed nothing, when the quick check refuses any
// item (the user is not a member now, another epoch, a seq beyond the
// max) or when the conversations do not fit one call (a Cluster's several
// slots, more items than a call carries): the caller then checks in full
// and raises as before. Otherwise it answers each conversation's epoch
// and large flag, and the raises of the items outside large groups in
// their order, as RaiseReceipts answers marks.
func (s *Store) RaiseAckedReceipts(ctx context.Context, user string, items []AckItem) (map[string]AckedConv, []RaisedReceipt, bool, error) {
	if len(items) == 0 {
		return nil, nil, false, nil
	}
	var convs []string
	of := map[string][]int{} // conversation → its items
	for i, it := range items {
		if _, ok := of[it.Conv]; !ok {
			convs = append(convs, it.Conv)
		}
		of[it.Conv] = append(of[it.Conv], i)
	}
	groups := s.slotCalls(len(convs), receiptMarksPerCall, func(j int) int { return len(of[convs[j]]) },
		func(j int) string { return s.keys.ConvMeta(convs[j]) })
	if len(groups) != 1 {
		return nil, nil, false, nil
	}
	keys := make([]string, 0, 6*len(convs))
	args := make([]any, 0, 1+len(convs)+2*len(items))
	args = append(args, user)
	for _, c := range convs {
		keys = append(keys, s.keys.ConvMeta(c), s.keys.Members(c), s.keys.Delivered(c), s.keys.ReadBy(c), s.keys.ReceiptEpoch(c), s.keys.Pushed(c))
		args = append(args, len(of[c]))
		for _, i := range of[c] {
			args = append(args, items[i].Seq, items[i].Epoch)
		}
	}
	ctx, cancel := context.WithTimeout(ctx, s.cfg.CallTimeout)
	defer cancel()
	cmds, err := s.evalPiped(ctx, receiptsAckScript, []scriptCall{{keys: keys, args: args}})
	if err != nil {
		return nil, nil, false, fmt.Errorf("check and raise the receipts of an ack of %d conversations by %s: %w", len(convs), user, err)
	}
	vals, _ := cmds[0].Slice()
	if len(vals) == 0 {
		return nil, nil, false, fmt.Errorf("check and raise the receipts of an ack by %s: empty answer", user)
	}
	if readReplyUint(vals[0]) != receiptsAckStatusRaised {
		return nil, nil, false, nil
	}
	if len(vals) != 1+len(convs) {
		return nil, nil, false, fmt.Errorf("check and raise the receipts of an ack by %s: answered %d conversations for %d", user, len(vals)-1, len(convs))
	}
	acked := make(map[string]AckedConv, len(convs))
	pairsOf := make(map[string][]any, len(convs))
	for j, c := range convs {
		conv, _ := vals[1+j].([]any)
		if len(conv) != 3 {
			return nil, nil, false, fmt.Errorf("check and raise the receipts of %s by %s: malformed answer", c, user)
		}
		epoch, err := strconv.ParseUint(readReplyString(conv[0]), 10, 64)
		if err != nil {
			return nil, nil, false, fmt.Errorf("check and raise the receipts of %s by %s: epoch %q", c, user, readReplyString(conv[0]))
		}
		acked[c] = AckedConv{Epoch: epoch, Large: readReplyUint(conv[1]) == 1}
		pairsOf[c], _ = conv[2].([]any)
	}
	raised := make([]RaisedReceipt, 0, len(items))
	seen := map[string]int{} // conversation → its items answered so far
	for _, it := range items {
		a := acked[it.Conv]
		if a.Large {
			continue
		}
		r := RaisedReceipt{ReceiptMark: ReceiptMark{Conv: it.Conv, Epoch: a.Epoch, Member: user, Seq: it.Seq}}
		n := seen[it.Conv]
		seen[it.Conv] = n + 1
		if pairs := pairsOf[it.Conv]; n < len(pairs) {
			if pair, ok := pairs[n].([]any); ok && len(pair) == 2 {
				r.Raised = readReplyUint(pair[0]) == 1
				r.Prev = readReplyUint(pair[1])
			}
		}
		raised = append(raised, r)
	}
	return acked, raised, true, nil
}
