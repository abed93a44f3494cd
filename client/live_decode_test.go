package client

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"reflect"
	"testing"
)

// liveFrames are frames as the server writes them (a message frame is
// {"type":"message","attempt":N,"message":…} around the full form of a
// message) and shapes the reader leaves to encoding/json or refuses.
func liveFrames() []string {
	rng := rand.New(rand.NewPCG(11, 2))
	var out []string
	for i := range 12 {
		m, err := json.Marshal(serverMessageOf(rng, "g-live", 3, uint64(100+i), false, i%3 == 0))
		if err != nil {
			panic(err)
		}
		out = append(out, fmt.Sprintf(`{"type":"message","attempt":%d,"message":%s}`, 1+i%6, m),
			fmt.Sprintf(`{"type":"ephemeral","message":%s}`, m))
	}
	return append(out,
		`{"type":"hello","node":"a","conn_id":"c1","device_id":"d","heartbeat_ms":25000,"max_queue_bytes":1048576}`,
		`{"type":"notice","conversations":[{"conv":"g","epoch":1,"max_seq":4,"device_acked_seq":2,"unread":2,"mentions":0}],"total":{"conversations":1,"unread":2,"mentions":0},"replay":false,"truncated":false,"resync":false}`,
		`{"type":"receipt","conv_id":"g","epoch":1,"seq":4,"delivered":3,"read":1,"members":9}`,
		`{"type":"receipt","conv_id":"g","epoch":1,"seq":5,"state":"pushed","pushed":2,"delivered":0,"read":0,"members":9}`,
		`{"type":"ping"}`, `{"type":"message","attempt":2,"message":null}`, `{"type":"message","message":{"seq":5,"text":"hi"}}`,
		`{"attempt":1,"type":"message","message":{"conv_id":"g","seq":1,"body":"AAEC"}}`, `null`, `{}`,
		`{"type":"message","type":"ephemeral","message":{"seq":1}}`, `{"Type":"message","message":{"seq":1}}`,
		`{"type":"message","attempt":"1","message":{"seq":1}}`, `{"type":"message","attempt":1.5}`,
		`{"type":"message","message":{"seq":-1}}`, `{"type":"message","message":[]}`, `{"type":"message","message":5}`,
		`{"type":"message","message":{"seq":1}`, `{"type":"message"} x`, `{"type":7}`, ``)
}

func TestTheDeviceReadsLiveFramesAsEncodingJSONDoes(t *testing.T) {
	inputs := liveFrames()
	for _, in := range differentialInputs() {
		inputs = append(inputs, string(in.data))
	}
	for i, in := range inputs {
		t.Run(fmt.Sprintf("%d %.40q", i, in), func(t *testing.T) {
			got, gerr := decodeFrame([]byte(in))
			var want Frame
			werr := json.Unmarshal([]byte(in), &want)
			switch {
			case (gerr == nil) != (werr == nil):
				t.Fatalf("the reader says %v, encoding/json says %v", gerr, werr)
			case gerr == nil && !reflect.DeepEqual(got, want):
				t.Fatalf("the reader gives\n%#v\nencoding/json gives\n%#v", got, want)
			}
		})
	}
}

func TestAMessageFrameIsReadWithoutEncodingJSON(t *testing.T) {
	in := []byte(liveFrames()[0])
	rd := newJSONReader(in)
	var f Frame
	rd.liveFrame(&f)
	err := rd.End()
	rd.release()
	if err != nil || f.Type != "message" || f.Message == nil || f.Message.Seq != 100 || f.Attempt != 1 {
		t.Fatalf("frame %+v, err %v: the reader did not read it itself", f, err)
	}
}

func TestAReceiptFrameCarriesItsStateAndPushedCount(t *testing.T) {
	cases := []struct {
		frame  string
		state  string
		pushed int
	}{
		{`{"type":"receipt","conv_id":"g","epoch":1,"seq":5,"state":"pushed","pushed":2,"delivered":0,"read":0,"members":9}`, "pushed", 2},
		{`{"type":"receipt","conv_id":"g","epoch":1,"seq":4,"delivered":3,"read":1,"members":9}`, "", 0}, // an older server's
	}
	for _, tc := range cases {
		f, err := decodeFrame([]byte(tc.frame))
		if err != nil || f.State != tc.state || f.Pushed != tc.pushed {
			t.Errorf("%s: state %q pushed %d (%v), want %q %d", tc.frame, f.State, f.Pushed, err, tc.state, tc.pushed)
		}
	}
}
