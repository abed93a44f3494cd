package api

import (
	"reflect"
	"testing"

	"github.com/offlinebox/offlinebox/edge"
)

// ackFrameCases are frames the fast reader must take (want true) or leave
// to decodeJSON (want false).
var ackFrameCases = []struct {
	name  string
	frame string
	want  bool
}{
	{"client's form", `{"acks":[{"conv_id":"g01","seq":5,"epoch":1}],"reply":false,"type":"ack"}`, true},
	{"type first, no epoch", `{"type":"ack","acks":[{"conv_id":"dm-1","seq":18446744073709551615}]}`, true},
	{"white space everywhere", " {\n \"type\" : \"ack\" ,\t\"acks\" : [ { \"seq\" : 7 , \"conv_id\" : \"c\" } , {\"conv_id\":\"d\",\"seq\":1} ] , \"reply\" : true } \r\n", true},
	{"empty acks (refused later)", `{"type":"ack","acks":[]}`, true},
	{"empty item (refused later)", `{"type":"ack","acks":[{}]}`, true},
	{"zero seq (refused later)", `{"type":"ack","acks":[{"conv_id":"c","seq":0}]}`, true},
	{"no acks", `{"type":"ack"}`, true},
	{"another type", `{"type":"ping"}`, false},
	{"no type", `{"acks":[{"conv_id":"c","seq":1}]}`, false},
	{"type twice", `{"type":"ack","type":"ack","acks":[]}`, false},
	{"seq twice", `{"type":"ack","acks":[{"conv_id":"c","seq":1,"seq":2}]}`, false},
	{"unknown key", `{"type":"ack","acks":[],"x":1}`, false},
	{"unknown item key", `{"type":"ack","acks":[{"conv_id":"c","seq":1,"Seq":2}]}`, false},
	{"key in another case", `{"Type":"ack","acks":[]}`, false},
	{"escape in a string", `{"type":"ack","acks":[{"conv_id":"c\u0041","seq":1}]}`, false},
	{"non-ASCII", `{"type":"ack","acks":[{"conv_id":"cé","seq":1}]}`, false},
	{"invalid UTF-8", "{\"type\":\"ack\",\"acks\":[{\"conv_id\":\"c\xff\",\"seq\":1}]}", false},
	{"leading zero", `{"type":"ack","acks":[{"conv_id":"c","seq":01}]}`, false},
	{"negative", `{"type":"ack","acks":[{"conv_id":"c","seq":-1}]}`, false},
	{"fraction", `{"type":"ack","acks":[{"conv_id":"c","seq":1.0}]}`, false},
	{"exponent", `{"type":"ack","acks":[{"conv_id":"c","seq":1e3}]}`, false},
	{"overflow", `{"type":"ack","acks":[{"conv_id":"c","seq":18446744073709551616}]}`, false},
	{"seq as a string", `{"type":"ack","acks":[{"conv_id":"c","seq":"1"}]}`, false},
	{"null acks", `{"type":"ack","acks":null}`, false},
	{"reply not a boolean", `{"type":"ack","acks":[],"reply":1}`, false},
	{"trailing data", `{"type":"ack","acks":[]}x`, false},
	{"trailing comma", `{"type":"ack","acks":[{"conv_id":"c","seq":1},]}`, false},
	{"missing comma", `{"type":"ack" "acks":[]}`, false},
	{"cut short", `{"type":"ack","acks":[{"conv_id":"c","seq":1}`, false},
	{"control character", "{\"type\":\"ack\",\"acks\":[{\"conv_id\":\"c\t\",\"seq\":1}]}", false},
}

func TestAckFrameReaderTakesWhatDecodeJSONReadsTheSameAndLeavesTheRest(t *testing.T) {
	for _, tc := range ackFrameCases {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := edge.ParseAckFrame([]byte(tc.frame))
			if ok != tc.want {
				t.Fatalf("parseAckFrame took it: %v, want %v", ok, tc.want)
			}
			if ok {
				assertSameAsDecodeJSON(t, []byte(tc.frame), got)
			}
		})
	}
}

func assertSameAsDecodeJSON(t *testing.T, data []byte, got edge.ClientFrame) {
	t.Helper()
	var want edge.ClientFrame
	if err := decodeJSON(data, &want, ""); err != nil {
		t.Fatalf("parseAckFrame took %q, which decodeJSON refuses: %v", data, err.Msg)
	}
	if len(want.Acks) == 0 && len(got.Acks) == 0 {
		want.Acks, got.Acks = nil, nil // [] and absent are both "empty" to checkedSeqItems
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("parseAckFrame read %q as %+v, decodeJSON as %+v", data, got, want)
	}
}

func FuzzAckFrameReaderAgreesWithDecodeJSON(f *testing.F) {
	for _, tc := range ackFrameCases {
		f.Add([]byte(tc.frame))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if got, ok := edge.ParseAckFrame(data); ok {
			assertSameAsDecodeJSON(t, data, got)
		}
	})
}
