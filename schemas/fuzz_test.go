package schemas

import (
	"errors"
	"testing"

	"google.golang.org/protobuf/proto"
)

// FuzzDecodeMessage: any byte string either decodes into a message that
// passes validation, or fails with ErrInvalid; it never panics.
func FuzzDecodeMessage(f *testing.F) {
	seed, _ := proto.Marshal(validDirect())
	f.Add(seed)
	f.Add([]byte{})
	f.Add([]byte{0x12, 0x01, '{'})
	f.Fuzz(func(t *testing.T, raw []byte) {
		m, err := DecodeMessage(raw, Limits{BodyBytes: 1024})
		if err != nil {
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("error is not ErrInvalid: %v", err)
			}
			return
		}
		if err := ValidateMessage(m, Limits{BodyBytes: 1024}); err != nil {
			t.Fatalf("decoded message does not validate: %v", err)
		}
	})
}

// FuzzDecodeReceipt: receipts decode or fail with ErrInvalid.
func FuzzDecodeReceipt(f *testing.F) {
	seed, _ := proto.Marshal(&Receipt{UserId: "u", ConvId: "c", Seq: 3, Kind: ReceiptKind_RECEIPT_KIND_READ})
	f.Add(seed)
	f.Add([]byte{0x0a})
	f.Fuzz(func(t *testing.T, raw []byte) {
		if _, err := DecodeReceipt(raw); err != nil && !errors.Is(err, ErrInvalid) {
			t.Fatalf("error is not ErrInvalid: %v", err)
		}
	})
}
