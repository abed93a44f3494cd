package push

import (
	"google.golang.org/protobuf/encoding/protowire"

	"github.com/offlinebox/offlinebox/schemas"
)

// messageQoSField is schemas.Message's qos field number, read from the
// generated descriptor so that a renumbering in the .proto cannot leave
// this reader looking at another field.
var messageQoSField = (&schemas.Message{}).ProtoReflect().Descriptor().Fields().ByName("qos").Number()

// storedRecord reports, from the wire form alone, that an im.messages
// record is stored (not QoS 0), so this stage, which pushes it once it
// comes back sequenced, skips it without decoding and validating it. A
// record it cannot read reports false and is decoded in full.
func storedRecord(value []byte) bool {
	qos := schemas.QoS_QOS_UNSPECIFIED
	for len(value) > 0 {
		num, typ, n := protowire.ConsumeTag(value)
		if n < 0 {
			return false
		}
		value = value[n:]
		if num == messageQoSField && typ == protowire.VarintType {
			v, m := protowire.ConsumeVarint(value)
			if m < 0 {
				return false
			}
			qos = schemas.QoS(int32(v)) // the last one counts, as proto.Unmarshal reads it
			value = value[m:]
			continue
		}
		m := protowire.ConsumeFieldValue(num, typ, value)
		if m < 0 {
			return false
		}
		value = value[m:]
	}
	return (&schemas.Message{Qos: qos}).Stored()
}
