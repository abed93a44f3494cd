package schemas

import (
	"errors"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"
)

func validDirect() *Message {
	return &Message{
		ClientMsgId: "m1", ConvId: "d-alice-bob", ConvType: ConvType_CONV_TYPE_DIRECT,
		Sender: "alice", Recipients: []string{"bob"}, Kind: Kind_KIND_MESSAGE,
		Qos: QoS_QOS_AT_LEAST_ONCE, ContentType: "text/plain", Body: []byte("hi"),
	}
}

func TestValidateMessageNamesTheFieldThatIsWrong(t *testing.T) {
	cases := []struct {
		name  string
		edit  func(m *Message)
		field string
	}{
		{"valid direct message", func(m *Message) {}, ""},
		{"valid group message without recipients", func(m *Message) {
			m.ConvType = ConvType_CONV_TYPE_GROUP
			m.Recipients = nil
		}, ""},
		{"missing conv id", func(m *Message) { m.ConvId = "" }, "conv_id"},
		{"conv id with a hash tag brace", func(m *Message) { m.ConvId = "a{b" }, "conv_id"},
		{"conv id with a colon", func(m *Message) { m.ConvId = "a:b" }, "conv_id"},
		{"conv id too long", func(m *Message) { m.ConvId = strings.Repeat("x", MaxIDBytes+1) }, "conv_id"},
		{"missing sender", func(m *Message) { m.Sender = "" }, "sender"},
		{"valid tag", func(m *Message) { m.Tag = "finance" }, ""},
		{"tag with a colon", func(m *Message) { m.Tag = "dept:finance" }, "tag"},
		{"tag too long", func(m *Message) { m.Tag = strings.Repeat("t", MaxIDBytes+1) }, "tag"},
		{"missing client msg id", func(m *Message) { m.ClientMsgId = "" }, "client_msg_id"},
		{"unknown conversation type", func(m *Message) { m.ConvType = 7 }, "conv_type"},
		{"unknown kind", func(m *Message) { m.Kind = 9 }, "kind"},
		{"unspecified kind", func(m *Message) { m.Kind = Kind_KIND_UNSPECIFIED }, "kind"},
		{"unknown qos", func(m *Message) { m.Qos = 5 }, "qos"},
		{"direct message to two people", func(m *Message) { m.Recipients = []string{"bob", "carol"} }, "recipients"},
		{"join in a direct conversation", func(m *Message) { m.Kind = Kind_KIND_MEMBER_JOIN }, "kind"},
		{"join naming nobody", func(m *Message) {
			m.ConvType = ConvType_CONV_TYPE_GROUP
			m.Kind = Kind_KIND_MEMBER_JOIN
			m.Recipients = nil
		}, "recipients"},
		{"bad mention id", func(m *Message) { m.Mentions = []string{"ok", ""} }, "mentions[1]"},
		{"body over the limit", func(m *Message) { m.Body = make([]byte, DefaultMaxBodyBytes+1) }, "body"},
		{"body at the limit", func(m *Message) { m.Body = make([]byte, DefaultMaxBodyBytes) }, ""},
		{"unicode ids", func(m *Message) { m.ConvId = "会话-1"; m.Sender = "码仔" }, ""},
		{"a join giving the admin role", func(m *Message) { groupJoin(m, "bob", "carol"); m.Role = Role_ROLE_ADMIN }, ""},
		{"a role on a message", func(m *Message) { m.Role = Role_ROLE_ADMIN }, "role"},
		{"an unknown role", func(m *Message) { groupJoin(m, "bob"); m.Role = 9 }, "role"},
		{"ownership to two users", func(m *Message) { groupJoin(m, "bob", "carol"); m.Role = Role_ROLE_OWNER }, "recipients"},
		{"system authority", func(m *Message) { m.Authority = Authority_AUTHORITY_SYSTEM }, ""},
		{"an unknown authority", func(m *Message) { m.Authority = 5 }, "authority"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			m := validDirect()
			tc.edit(m)
			err := ValidateMessage(m, Limits{})
			if tc.field == "" {
				if err != nil {
					t.Fatalf("want valid, got %v", err)
				}
				return
			}
			var inv *InvalidError
			if !errors.As(err, &inv) || !errors.Is(err, ErrInvalid) {
				t.Fatalf("want InvalidError on %s, got %v", tc.field, err)
			}
			if inv.Field != tc.field {
				t.Fatalf("error names %q, want %q (%v)", inv.Field, tc.field, err)
			}
		})
	}
}

func TestDecodeMessageRejectsBytesThatAreNotAMessage(t *testing.T) {
	if _, err := DecodeMessage([]byte{0xff, 0xff, 0xff}, Limits{}); !errors.Is(err, ErrInvalid) {
		t.Fatalf("want ErrInvalid, got %v", err)
	}
	raw, err := proto.Marshal(validDirect())
	if err != nil {
		t.Fatal(err)
	}
	m, err := DecodeMessage(raw, Limits{})
	if err != nil || m.GetConvId() != "d-alice-bob" {
		t.Fatalf("decode valid message: %v %v", m, err)
	}
}

func TestQoSZeroIsNotStoredAndUnspecifiedIs(t *testing.T) {
	for qos, want := range map[QoS]bool{QoS_QOS_UNSPECIFIED: true, QoS_QOS_AT_LEAST_ONCE: true, QoS_QOS_AT_MOST_ONCE: false} {
		if got := (&Message{Qos: qos}).Stored(); got != want {
			t.Errorf("QoS %v stored = %v, want %v", qos, got, want)
		}
	}
}

func groupJoin(m *Message, users ...string) {
	m.ConvType, m.Kind, m.Recipients = ConvType_CONV_TYPE_GROUP, Kind_KIND_MEMBER_JOIN, users
}
