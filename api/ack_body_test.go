package api

import (
	"reflect"
	"testing"

	"github.com/offlinebox/offlinebox/edge"
)

// ackBodyCases are bodies of POST /v1/ack the fast reader must take (want
// true) or leave to decodeJSON (want false).
var ackBodyCases = []struct {
	name string
	body string
	want bool
}{
	{"client's form", `{"device_id":"phone","acks":[{"conv_id":"g01","seq":5,"epoch":1},{"conv_id":"dm-1","seq":2,"epoch":3}]}`, true},
	{"acks first, no epoch", `{"acks":[{"seq":18446744073709551615,"conv_id":"dm-1"}],"device_id":"d"}`, true},
	{"no device (the token's)", `{"acks":[{"conv_id":"c","seq":1}]}`, true},
	{"white space everywhere", " {\n \"device_id\" : \"d\" ,\t\"acks\" : [ { \"seq\" : 7 , \"conv_id\" : \"c\" } ] } \r\n", true},
	{"empty acks (refused later)", `{"device_id":"d","acks":[]}`, true},
	{"empty item (refused later)", `{"acks":[{}]}`, true},
	{"empty device (refused later)", `{"device_id":"","acks":[{"conv_id":"c","seq":1}]}`, true},
	{"no acks", `{"device_id":"d"}`, false},
	{"null acks", `{"device_id":"d","acks":null}`, false},
	{"device twice", `{"device_id":"a","device_id":"b","acks":[]}`, false},
	{"acks twice", `{"acks":[],"acks":[]}`, false},
	{"unknown key", `{"acks":[],"type":"ack"}`, false},
	{"key in another case", `{"Acks":[]}`, false},
	{"device not a string", `{"device_id":1,"acks":[]}`, false},
	{"escape in the device", `{"device_id":"d\u0041","acks":[]}`, false},
	{"non-ASCII conversation", `{"acks":[{"conv_id":"cé","seq":1}]}`, false},
	{"fraction", `{"acks":[{"conv_id":"c","seq":1.5}]}`, false},
	{"seq as a string", `{"acks":[{"conv_id":"c","seq":"1"}]}`, false},
	{"an array", `[{"conv_id":"c","seq":1}]`, false},
	{"trailing data", `{"acks":[]} {}`, false},
	{"cut short", `{"acks":[{"conv_id":"c","seq":1}]`, false},
}

func TestAckBodyReaderTakesWhatDecodeJSONReadsTheSameAndLeavesTheRest(t *testing.T) {
	s := &Server{cfg: Config{MaxCursors: 1000}}
	for _, tc := range ackBodyCases {
		t.Run(tc.name, func(t *testing.T) {
			dev, items, ok := edge.ParseAckBody([]byte(tc.body))
			if ok != tc.want {
				t.Fatalf("parseAckBody took it: %v, want %v", ok, tc.want)
			}
			if !ok {
				return
			}
			var body ackRequest
			if err := decodeJSON([]byte(tc.body), &body, ""); err != nil {
				t.Fatalf("parseAckBody took %q, which decodeJSON refuses: %v", tc.body, err.Msg)
			}
			if dev != body.DeviceID {
				t.Fatalf("device %q, decodeJSON reads %q", dev, body.DeviceID)
			}
			got, gotErr := s.checkedSeqItems(items, "acks")
			want, wantErr := s.parseSeqItems(body.Acks, "acks")
			if !reflect.DeepEqual(got, want) || !reflect.DeepEqual(gotErr, wantErr) {
				t.Fatalf("read as %+v (%v), decodeJSON as %+v (%v)", got, gotErr, want, wantErr)
			}
		})
	}
}

func FuzzAckBodyReaderAgreesWithDecodeJSON(f *testing.F) {
	for _, tc := range ackBodyCases {
		f.Add([]byte(tc.body))
	}
	s := &Server{cfg: Config{MaxCursors: 1000}}
	f.Fuzz(func(t *testing.T, data []byte) {
		dev, items, ok := edge.ParseAckBody(data)
		if !ok {
			return
		}
		var body ackRequest
		if err := decodeJSON(data, &body, ""); err != nil {
			t.Fatalf("parseAckBody took %q, which decodeJSON refuses: %v", data, err.Msg)
		}
		got, gotErr := s.checkedSeqItems(items, "acks")
		want, wantErr := s.parseSeqItems(body.Acks, "acks")
		if dev != body.DeviceID || !reflect.DeepEqual(got, want) || !reflect.DeepEqual(gotErr, wantErr) {
			t.Fatalf("%q: read as %q %+v (%v), decodeJSON as %q %+v (%v)", data, dev, got, gotErr, body.DeviceID, want, wantErr)
		}
	})
}
