package live

import (
	"google.golang.org/protobuf/encoding/protowire"
)

// decodeBinary reads a binary batch; Record aliases data.
func decodeBinary(data []byte) (Batch, error) {
	var b Batch
	err := fields(data, func(n protowire.Number, v []byte, _ uint64) error {
		if n != 1 {
			return nil
		}
		b.Envelopes = append(b.Envelopes, Envelope{})
		return b.Envelopes[len(b.Envelopes)-1].decode(v)
	})
	return b, err
}

func (e *Envelope) decode(msg []byte) error {
	return fields(msg, func(n protowire.Number, v []byte, u uint64) error {
		switch n {
		case 1:
			e.Kind = string(v)
		case 2:
			e.Conv = string(v)
		case 3:
			e.Targets = append(e.Targets, Target{})
			return e.Targets[len(e.Targets)-1].decode(v)
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
}

func (t *Target) decode(msg []byte) error {
	return fields(msg, func(n protowire.Number, v []byte, u uint64) error {
		switch n {
		case 1:
			t.User = string(v)
		case 2:
			t.Device = string(v)
		case 3:
			t.Conn = string(v)
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
			r.State = string(v)
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
	return fields(msg, func(n protowire.Number, v []byte, u uint64) error {
		switch n {
		case 1:
			r.Conv = string(v)
		case 2:
			r.ClientMsgID = string(v)
		case 3:
			r.Code = string(v)
		case 4:
			r.Reason = string(v)
		case 5:
			r.AtMS = int64(u)
		}
		return nil
	})
}
