package edge

import (
	"strconv"

	"github.com/offlinebox/offlinebox/schemas"
	"github.com/offlinebox/offlinebox/wire"
)

// SeqItem is a (conversation, seq, epoch) of a batch request, checked
// against the conversation before anything is written. Field names it in
// the request (acks[3]) for the error that refuses it.
type SeqItem struct {
	Field string
	Conv  string
	Seq   uint64
	Epoch uint64
}

// CheckedSeqItems checks decoded (conv_id, seq[, epoch]) items of field:
// at least one and at most most, valid ids, seqs above 0 and none above
// schemas.MaxSeq.
func CheckedSeqItems(decoded []wire.AckItem, field string, most int) ([]SeqItem, error) {
	if len(decoded) == 0 {
		return nil, BadRequest(field, "is empty")
	}
	if len(decoded) > most {
		return nil, BadRequest(field, "holds %d items, more than %d", len(decoded), most)
	}
	items := make([]SeqItem, len(decoded))
	for i, it := range decoded {
		f := field + "[" + strconv.Itoa(i) + "]"
		if verr := schemas.ValidID("conv_id", it.ConvID); verr != nil {
			return nil, InvalidField(f, verr)
		}
		if it.Seq == 0 {
			return nil, BadRequest(f+".seq", "is required and above 0")
		}
		if err := SeqInRange(f+".seq", it.Seq); err != nil {
			return nil, err
		}
		if err := SeqInRange(f+".epoch", it.Epoch); err != nil {
			return nil, err
		}
		items[i] = SeqItem{Field: f, Conv: it.ConvID, Seq: it.Seq, Epoch: it.Epoch}
	}
	return items, nil
}

// SeqInRange refuses a seq or epoch above schemas.MaxSeq: none can exist,
// and arithmetic on it (the next seq) would wrap.
func SeqInRange(field string, n uint64) error {
	if n > schemas.MaxSeq {
		return BadRequest(field, "%d is above the largest seq or epoch there can be (%d)", n, uint64(schemas.MaxSeq))
	}
	return nil
}
