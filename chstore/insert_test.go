package chstore

import (
	"errors"
	"math"
	"testing"
	"time"

	"github.com/offlinebox/offlinebox/schemas"
)

func TestCheckInsertableRefusesRecordsTheTableCannotHold(t *testing.T) {
	good := func() *schemas.Sequenced {
		return &schemas.Sequenced{Seq: 3, WriteTimeMs: 1_700_000_000_000, Message: &schemas.Message{
			ConvId: "c1", ConvType: schemas.ConvType_CONV_TYPE_DIRECT, Kind: schemas.Kind_KIND_MESSAGE,
		}}
	}
	tests := []struct {
		name   string
		change func(m *schemas.Sequenced)
		ok     bool
	}{
		{"a plain message", func(*schemas.Sequenced) {}, true},
		{"membership notice", func(m *schemas.Sequenced) { m.Message.Kind = schemas.Kind_KIND_MEMBER_LEAVE }, true},
		{"no message", func(m *schemas.Sequenced) { m.Message = nil }, false},
		{"seq 0", func(m *schemas.Sequenced) { m.Seq = 0 }, false},
		{"no write time", func(m *schemas.Sequenced) { m.WriteTimeMs = 0 }, false},
		{"write time after 2106", func(m *schemas.Sequenced) { m.WriteTimeMs = (math.MaxUint32 + 1) * 1000 }, false},
		{"bad conv id", func(m *schemas.Sequenced) { m.Message.ConvId = "a:b" }, false},
		{"unknown conv type", func(m *schemas.Sequenced) { m.Message.ConvType = 9 }, false},
		{"unknown kind", func(m *schemas.Sequenced) { m.Message.Kind = 4 }, false},
		{"at-least-once", func(m *schemas.Sequenced) { m.Message.Qos = schemas.QoS_QOS_AT_LEAST_ONCE }, true},
		{"unknown qos", func(m *schemas.Sequenced) { m.Message.Qos = 3 }, false},
		{"a join giving the admin role", func(m *schemas.Sequenced) { m.Message.Role = schemas.Role_ROLE_ADMIN }, true},
		{"unknown role", func(m *schemas.Sequenced) { m.Message.Role = 4 }, false},
		{"system authority", func(m *schemas.Sequenced) { m.Message.Authority = schemas.Authority_AUTHORITY_SYSTEM }, true},
		{"unknown authority", func(m *schemas.Sequenced) { m.Message.Authority = 2 }, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := good()
			tt.change(m)
			err := CheckInsertable(m)
			if tt.ok != (err == nil) || (err != nil && !errors.Is(err, schemas.ErrInvalid)) {
				t.Fatalf("CheckInsertable = %v, want ok=%v (else ErrInvalid)", err, tt.ok)
			}
		})
	}
}

func TestDateTimeOfClampsToTheDateTimeRange(t *testing.T) {
	tests := []struct {
		ms   int64
		want int64
	}{
		{1_700_000_000_999, 1_700_000_000},
		{-5000, 0},
		{math.MaxInt64, math.MaxUint32},
	}
	for _, tt := range tests {
		if got := dateTimeOf(tt.ms); !got.Equal(time.Unix(tt.want, 0)) {
			t.Errorf("dateTimeOf(%d) = %v, want unix %d", tt.ms, got, tt.want)
		}
	}
}
