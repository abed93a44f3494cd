package api

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
)

func TestAcceptEncodingChoosesByQValueAndRefusesOnlyWhatIsRefused(t *testing.T) {
	big, small := minCodedBytes, minCodedBytes-1
	tests := []struct {
		name   string
		header []string // nil: no header
		size   int
		want   string
	}{
		{"no header: identity", nil, big, codingIdentity},
		{"an empty header: identity", []string{""}, big, codingIdentity},
		{"zstd and gzip: zstd on a tie", []string{"gzip, zstd"}, big, codingZstd},
		{"a browser's list", []string{"gzip, deflate, br, zstd"}, big, codingZstd},
		{"gzip preferred by q", []string{"zstd;q=0.5, gzip;q=0.8"}, big, codingGzip},
		{"zstd refused", []string{"zstd;q=0, gzip"}, big, codingGzip},
		{"identity preferred by q", []string{"gzip;q=0.2, identity"}, big, codingIdentity},
		{"upper case names and spaces", []string{" GZIP ; Q=1 "}, big, codingGzip},
		{"star takes what is not named", []string{"*"}, big, codingZstd},
		{"star refused, gzip named", []string{"*;q=0, gzip"}, big, codingGzip},
		{"only unknown codings: identity", []string{"br, compress"}, big, codingIdentity},
		{"a malformed q counts as refused", []string{"zstd;q=high, gzip;q=0.1"}, big, codingGzip},
		{"small answers stay identity", []string{"zstd, gzip"}, small, codingIdentity},
		{"small answers with identity refused are coded", []string{"zstd, identity;q=0"}, small, codingZstd},
		{"identity refused and nothing else: none", []string{"identity;q=0"}, big, ""},
		{"star refused: none", []string{"*;q=0"}, small, ""},
		{"headers given twice are one list", []string{"identity;q=0", "gzip"}, big, codingGzip},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := parseAcceptEncoding(tt.header).choose(tt.size); got != tt.want {
				t.Fatalf("Accept-Encoding %q, %d bytes: chose %q, want %q", tt.header, tt.size, got, tt.want)
			}
		})
	}
}

func TestAnswersComeInTheNegotiatedCodingAndDecodeToTheSameJSON(t *testing.T) {
	e := newEnv(t, envOptions{})
	e.runPipeline()
	ann, bob := e.token("ann", ""), e.token("bob", "bob-phone")
	e.produce(founding("team", "ann", "bob"))
	var msgs []string
	for i := range 40 {
		msgs = append(msgs, fmt.Sprintf("m%02d", i))
		e.produce(textMsg("team", msgs[i], "ann"))
	}
	eventually(t, "the messages are sequenced", func() (bool, string) {
		var p tPage
		code, data := e.call("GET", "/v1/conversations/team/messages?after=0&limit=200", ann, nil)
		if code != http.StatusOK || json.Unmarshal(data, &p) != nil {
			return false, fmt.Sprintf("%d %s", code, data)
		}
		return len(p.Messages) == 41, fmt.Sprintf("%d messages", len(p.Messages))
	})
	get := func(accept string) (*http.Response, []byte) {
		t.Helper()
		return roundTripAccepting(t, e.request("GET", "/v1/conversations/team/messages?after=0&limit=200", bob, nil), accept)
	}
	plainResp, plain := get("")
	if plainResp.Header.Get("Content-Encoding") != "" || plainResp.Header.Get("Vary") != "Accept-Encoding" || len(plain) < minCodedBytes {
		t.Fatalf("no Accept-Encoding: Content-Encoding %q, Vary %q, %d bytes; want identity, Vary, over %d bytes",
			plainResp.Header.Get("Content-Encoding"), plainResp.Header.Get("Vary"), len(plain), minCodedBytes)
	}
	for _, tc := range []struct{ accept, coding string }{{"zstd", "zstd"}, {"gzip", "gzip"}, {"gzip;q=0.5, zstd", "zstd"}} {
		resp, data := get(tc.accept)
		if got := resp.Header.Get("Content-Encoding"); got != tc.coding || resp.Header.Get("Vary") != "Accept-Encoding" {
			t.Fatalf("Accept-Encoding %q: Content-Encoding %q, Vary %q; want %q", tc.accept, got, resp.Header.Get("Vary"), tc.coding)
		}
		decoded, err := decodedAnswer(tc.coding, data)
		if err != nil {
			t.Fatalf("%s answer: %v", tc.coding, err)
		}
		if !bytes.Equal(decoded, plain) {
			t.Fatalf("%s answer decodes to another answer:\n%s\nwant\n%s", tc.coding, decoded, plain)
		}
		if len(data) >= len(plain) {
			t.Fatalf("%s answer is %d bytes, not smaller than the %d of identity", tc.coding, len(data), len(plain))
		}
	}
	resp, data := get("identity;q=0, br")
	if resp.StatusCode != http.StatusNotAcceptable || !strings.Contains(string(data), `"field":"Accept-Encoding"`) {
		t.Fatalf("nothing acceptable: %d %s; want 406 naming Accept-Encoding", resp.StatusCode, data)
	}
	// A small answer goes as it is.
	req := e.request("GET", "/healthz", "", nil)
	req.Header.Set("Accept-Encoding", "zstd")
	small, err := (&http.Transport{DisableCompression: true}).RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	small.Body.Close()
	if small.StatusCode != http.StatusOK || small.Header.Get("Content-Encoding") != "" {
		t.Fatalf("a small answer came in %q", small.Header.Get("Content-Encoding"))
	}
}

func TestAPageIsBoundedByItsByteBudgetRatherThanTwoHundredMessages(t *testing.T) {
	e := newEnv(t, envOptions{})
	e.runPipeline()
	ann := e.token("ann", "")
	e.produce(founding("team", "ann", "bob"))
	const n = 600
	for i := range n {
		e.produce(textMsg("team", fmt.Sprintf("m%03d", i), "ann"))
	}
	eventually(t, "the messages are sequenced", func() (bool, string) {
		var p tPage
		code, data := e.call("GET", "/v1/conversations/team/messages?limit=1", ann, nil)
		if code != http.StatusOK || json.Unmarshal(data, &p) != nil {
			return false, fmt.Sprintf("%d %s", code, data)
		}
		return p.MaxSeq == n+1, fmt.Sprintf("max seq %d", p.MaxSeq)
	})
	e.callOK(http.StatusBadRequest, "GET", "/v1/conversations/team/messages?after=0&limit=201", ann, nil, nil)
	var whole tPage
	e.callOK(http.StatusOK, "GET", "/v1/conversations/team/messages?after=0&limit=5000&max_bytes=1048576", ann, nil, &whole)
	if len(whole.Messages) != n+1 || whole.HasMore || whole.ConvType != "group" {
		t.Fatalf("a 1 MiB page of %d messages: %d messages, has_more %v, conv_type %q", n+1, len(whole.Messages), whole.HasMore, whole.ConvType)
	}
	var cut tPage
	data := e.callOK(http.StatusOK, "GET", "/v1/conversations/team/messages?after=0&limit=5000&max_bytes=8192", ann, nil, &cut)
	if len(data) > 8192 || !cut.HasMore || len(cut.Messages) == 0 || cut.Messages[0].Seq != 1 {
		t.Fatalf("an 8 KiB page: %d bytes, has_more %v, %d messages", len(data), cut.HasMore, len(cut.Messages))
	}
	var newest tPage
	data = e.callOK(http.StatusOK, "GET", "/v1/conversations/team/messages?limit=5000&max_bytes=8192", ann, nil, &newest)
	if len(data) > 8192 || !newest.HasMore || newest.Messages[len(newest.Messages)-1].Seq != n+1 {
		t.Fatalf("an 8 KiB page of the newest: %d bytes, has_more %v, last %d", len(data), newest.HasMore, newest.Messages[len(newest.Messages)-1].Seq)
	}
}

// BenchmarkAnswerCoding is the CPU a 128 KiB answer of text messages
// costs in each coding (compare the codings in one run).
func BenchmarkAnswerCoding(b *testing.B) {
	var sb strings.Builder
	for i := 0; sb.Len() < DefaultSyncBytes; i++ {
		fmt.Fprintf(&sb, `{"seq":%d,"write_time_ms":17961276%05d,"client_msg_id":"%08x-1f2e-4a3b-9c8d-%012x","kind":"message",`+
			`"sender":"u%05d","text":"the meeting moved to thursday, bring the slides %d","send_time_ms":17961276%05d},`, i, i, i*7919, i*104729, i%977, i, i)
	}
	data := []byte(sb.String())
	c, err := newCoders(1)
	if err != nil {
		b.Fatal(err)
	}
	for _, coding := range []string{codingZstd, codingGzip} {
		b.Run(coding, func(b *testing.B) {
			b.SetBytes(int64(len(data)))
			var out []byte
			for b.Loop() {
				out, _ = c.encode(b.Context(), coding, data)
			}
			b.ReportMetric(float64(len(out))/float64(len(data)), "wire/decoded")
		})
	}
}

// roundTripAccepting sends req asking for the codings in accept (none when
// empty) through a transport that adds nothing of its own, so the header
// is the test's, and returns the answer with its body as it came.
func roundTripAccepting(t *testing.T, req *http.Request, accept string) (*http.Response, []byte) {
	t.Helper()
	if accept != "" {
		req.Header.Set("Accept-Encoding", accept)
	}
	resp, err := (&http.Transport{DisableCompression: true}).RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, data
}
