package live

import (
	"strings"

	"google.golang.org/protobuf/encoding/protowire"
)

// decodeBinary reads a binary batch; Record aliases data. The envelopes
// and every envelope's targets are counted first so that each is one
// allocation: the targets of all envelopes share one array, each
// envelope's slice capped at its own so an append never reaches the next.
func decodeBinary(data []byte) (Batch, error) {
	envelopes, targets := 0, 0
	err := fields(data, func(n protowire.Number, v []byte, _ uint64) error {
		if n != 1 {
			return nil
		}
		envelopes++
		return fields(v, func(n protowire.Number, _ []byte, _ uint64) error {
			if n == 3 {
				targets++
			}
			return nil
		})
	})
	if err != nil || envelopes == 0 {
		return Batch{}, err
	}
	b := Batch{Envelopes: make([]Envelope, envelopes)}
	var slab []Target
	if targets > 0 {
		slab = make([]Target, 0, targets)
	}
	i := 0
	err = fields(data, func(n protowire.Number, v []byte, _ uint64) error {
		if n != 1 {
			return nil
		}
		e := &b.Envelopes[i]
		i++
		return e.decode(v, &slab)
	})
	return b, err
}

// decode reads one envelope, its targets appended to slab.
func (e *Envelope) decode(msg []byte, slab *[]Target) error {
	first := len(*slab)
	err := fields(msg, func(n protowire.Number, v []byte, u uint64) error {
		switch n {
		case 1:
			e.Kind = kindOf(v)
		case 2:
			e.Conv = string(v)
		case 3:
			*slab = append(*slab, Target{})
			return (*slab)[len(*slab)-1].decode(v)
		case 4:
			e.Large = u != 0
		case 5:
			e.Record = v
		case 6:
			e.Receipt = &Receipt{}
			return e.Receipt.decode(v)
		case 7:
			e.Rejected = &Rejected{}
			return e.Rejected.decode(v)
		case 8:
			e.SentMS = int64(u)
		}
		return nil
	})
	if last := len(*slab); last > first {
		e.Targets = (*slab)[first:last:last]
	}
	return err
}

// kindOf gives the constant for a known kind, so that the commonest
// string of a batch costs no allocation.
func kindOf(v []byte) string {
	switch string(v) {
	case KindPush:
		return KindPush
	case KindEphemeral:
		return KindEphemeral
	case KindReceipt:
		return KindReceipt
	case KindRejected:
		return KindRejected
	case KindKick:
		return KindKick
	case KindListen:
		return KindListen
	}
	return string(v)
}

// receiptStateOf does the same for a receipt's state.
func receiptStateOf(v []byte) string {
	for _, s := range [...]string{"stored", "pushed", "delivered", "read"} {
		if string(v) == s {
			return s
		}
	}
	return string(v)
}

// strs hands out the string fields of one message from one allocation,
// sized by a first pass over it (stringBytes). The strings never alias the
// payload; holding one keeps only its message's strings alive.
type strs struct{ b strings.Builder }

func (s *strs) take(v []byte) string {
	if len(v) == 0 {
		return ""
	}
	start := s.b.Len()
	s.b.Write(v)
	// Bytes written to a Builder are never written again, so a string
	// over them stays as it was while the Builder grows.
	return s.b.String()[start:]
}

// grow sizes s for the bytes fields of msg numbered up to last.
func (s *strs) grow(msg []byte, last protowire.Number) {
	n := 0
	_ = fields(msg, func(num protowire.Number, v []byte, _ uint64) error {
		if num <= last {
			n += len(v)
		}
		return nil
	})
	s.b.Grow(n)
}

func (t *Target) decode(msg []byte) error {
	var s strs
	s.grow(msg, 3)
	return fields(msg, func(n protowire.Number, v []byte, u uint64) error {
		switch n {
		case 1:
			t.User = s.take(v)
		case 2:
			t.Device = s.take(v)
		case 3:
			t.Conn = s.take(v)
		case 4:
			t.Joined = u
		}
		return nil
	})
}

func (r *Receipt) decode(msg []byte) error {
	return fields(msg, func(n protowire.Number, v []byte, u uint64) error {
		switch n {
		case 1:
			r.Conv = string(v)
		case 2:
			r.Epoch = u
		case 3:
			r.Seq = u
		case 4:
			r.State = receiptStateOf(v)
		case 5:
			r.Pushed = int(u)
		case 6:
			r.Delivered = int(u)
		case 7:
			r.Read = int(u)
		case 8:
			r.Members = int(u)
		case 9:
			r.PeerDeliveredSeq = u
		case 10:
			r.PeerReadSeq = u
		}
		return nil
	})
}

func (r *Rejected) decode(msg []byte) error {
	var s strs
	s.grow(msg, 4)
	return fields(msg, func(n protowire.Number, v []byte, u uint64) error {
		switch n {
		case 1:
			r.Conv = s.take(v)
		case 2:
			r.ClientMsgID = s.take(v)
		case 3:
			r.Code = s.take(v)
		case 4:
			r.Reason = s.take(v)
		case 5:
			r.AtMS = int64(u)
		}
		return nil
	})
}
