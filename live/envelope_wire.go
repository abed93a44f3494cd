package live

import (
	"errors"

	"google.golang.org/protobuf/encoding/protowire"
)

// The binary form of a batch is the protobuf message LiveBatch of
// schemas/offlinebox.proto (the contract: its field numbers and types are
// what this codec writes, as envelope_proto_test.go checks both ways),
// written and read here by hand because that costs a third of the time
// and fewer allocations than the generated code plus a conversion
// (BenchmarkEnvelope). The old JSON form starts with '{', which no binary
// batch can (0x7b would be field 15 as a group, a wire type never written
// here), so Decode tells them apart by their first byte during a rolling
// upgrade.

func appendStr(b []byte, n protowire.Number, s string) []byte {
	if s == "" {
		return b
	}
	return protowire.AppendString(protowire.AppendTag(b, n, protowire.BytesType), s)
}

func appendU(b []byte, n protowire.Number, v uint64) []byte {
	if v == 0 {
		return b
	}
	return protowire.AppendVarint(protowire.AppendTag(b, n, protowire.VarintType), v)
}

func sizeStr(n protowire.Number, s string) int {
	if s == "" {
		return 0
	}
	return protowire.SizeTag(n) + protowire.SizeBytes(len(s))
}

func sizeU(n protowire.Number, v uint64) int {
	if v == 0 {
		return 0
	}
	return protowire.SizeTag(n) + protowire.SizeVarint(v)
}

func sizeMsg(n protowire.Number, size int) int {
	return protowire.SizeTag(n) + protowire.SizeBytes(size)
}

func (t *Target) size() int {
	return sizeStr(1, t.User) + sizeStr(2, t.Device) + sizeStr(3, t.Conn) + sizeU(4, t.Joined)
}

func (t *Target) appendTo(b []byte) []byte {
	return appendU(appendStr(appendStr(appendStr(b, 1, t.User), 2, t.Device), 3, t.Conn), 4, t.Joined)
}

func (r *Receipt) size() int {
	return sizeStr(1, r.Conv) + sizeU(2, r.Epoch) + sizeU(3, r.Seq) + sizeStr(4, r.State) + sizeU(5, uint64(r.Pushed)) +
		sizeU(6, uint64(r.Delivered)) + sizeU(7, uint64(r.Read)) + sizeU(8, uint64(r.Members)) +
		sizeU(9, r.PeerDeliveredSeq) + sizeU(10, r.PeerReadSeq)
}

func (r *Receipt) appendTo(b []byte) []byte {
	b = appendU(appendU(appendStr(b, 1, r.Conv), 2, r.Epoch), 3, r.Seq)
	b = appendU(appendU(appendStr(b, 4, r.State), 5, uint64(r.Pushed)), 6, uint64(r.Delivered))
	b = appendU(appendU(b, 7, uint64(r.Read)), 8, uint64(r.Members))
	return appendU(appendU(b, 9, r.PeerDeliveredSeq), 10, r.PeerReadSeq)
}

func (r *Rejected) size() int {
	return sizeStr(1, r.Conv) + sizeStr(2, r.ClientMsgID) + sizeStr(3, r.Code) + sizeStr(4, r.Reason) + sizeU(5, uint64(r.AtMS))
}

func (r *Rejected) appendTo(b []byte) []byte {
	b = appendStr(appendStr(appendStr(b, 1, r.Conv), 2, r.ClientMsgID), 3, r.Code)
	return appendU(appendStr(b, 4, r.Reason), 5, uint64(r.AtMS))
}

func (e *Envelope) size() int {
	n := sizeStr(1, e.Kind) + sizeStr(2, e.Conv) + sizeU(8, uint64(e.SentMS))
	for i := range e.Targets {
		n += sizeMsg(3, e.Targets[i].size())
	}
	if e.Large {
		n += sizeU(4, 1)
	}
	if len(e.Record) > 0 {
		n += protowire.SizeTag(5) + protowire.SizeBytes(len(e.Record))
	}
	if e.Receipt != nil {
		n += sizeMsg(6, e.Receipt.size())
	}
	if e.Rejected != nil {
		n += sizeMsg(7, e.Rejected.size())
	}
	return n
}

func (e *Envelope) appendTo(b []byte) []byte {
	b = appendStr(appendStr(b, 1, e.Kind), 2, e.Conv)
	for i := range e.Targets {
		b = protowire.AppendVarint(protowire.AppendTag(b, 3, protowire.BytesType), uint64(e.Targets[i].size()))
		b = e.Targets[i].appendTo(b)
	}
	if e.Large {
		b = appendU(b, 4, 1)
	}
	if len(e.Record) > 0 {
		b = protowire.AppendBytes(protowire.AppendTag(b, 5, protowire.BytesType), e.Record)
	}
	if e.Receipt != nil {
		b = protowire.AppendVarint(protowire.AppendTag(b, 6, protowire.BytesType), uint64(e.Receipt.size()))
		b = e.Receipt.appendTo(b)
	}
	if e.Rejected != nil {
		b = protowire.AppendVarint(protowire.AppendTag(b, 7, protowire.BytesType), uint64(e.Rejected.size()))
		b = e.Rejected.appendTo(b)
	}
	return appendU(b, 8, uint64(e.SentMS))
}

// encodeBinary renders b in one allocation, sized first.
func encodeBinary(b Batch) []byte {
	n := 0
	for i := range b.Envelopes {
		n += sizeMsg(1, b.Envelopes[i].size())
	}
	out := make([]byte, 0, n)
	for i := range b.Envelopes {
		e := &b.Envelopes[i]
		out = protowire.AppendVarint(protowire.AppendTag(out, 1, protowire.BytesType), uint64(e.size()))
		out = e.appendTo(out)
	}
	return out
}

var errMalformed = errors.New("malformed protobuf")

// fields calls f with each field of msg; a bytes field's value is v, a
// varint's is u.
func fields(msg []byte, f func(n protowire.Number, v []byte, u uint64) error) error {
	for len(msg) > 0 {
		num, typ, n := protowire.ConsumeTag(msg)
		if n < 0 {
			return errMalformed
		}
		msg = msg[n:]
		var v []byte
		var u uint64
		switch typ {
		case protowire.BytesType:
			v, n = protowire.ConsumeBytes(msg)
		case protowire.VarintType:
			u, n = protowire.ConsumeVarint(msg)
		default:
			n = protowire.ConsumeFieldValue(num, typ, msg)
		}
		if n < 0 {
			return errMalformed
		}
		msg = msg[n:]
		if err := f(num, v, u); err != nil {
			return err
		}
	}
	return nil
}
