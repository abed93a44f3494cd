package api

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os/exec"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/klauspost/compress/zstd"

	sdk "github.com/offlinebox/offlinebox/client"
	"github.com/offlinebox/offlinebox/redisstore/readpath"
	"github.com/offlinebox/offlinebox/schemas"
)

// groupEntries are n decoded entries of one group, as one slice read
// answers them.
func groupEntries(conv string, from, n int) []*schemas.Sequenced {
	out := make([]*schemas.Sequenced, n)
	for i := range out {
		out[i] = &schemas.Sequenced{Seq: uint64(from + i), Epoch: 1, WriteTimeMs: 1_700_000_000_000 + int64(i),
			Message: &schemas.Message{ConvId: conv, ConvType: schemas.ConvType_CONV_TYPE_GROUP, Kind: schemas.Kind_KIND_MESSAGE,
				Sender: fmt.Sprintf("u%03d", i%37), ContentType: "text/plain",
				Body: []byte(fmt.Sprintf("message %d of %s: %s", from+i, conv, strings.Repeat("lorem ipsum ", i%9)))}}
	}
	return out
}

// decoders are every zstd decoder a client of the API decodes with: the
// one-shot DecodeAll (the Go client, the benchmarks) and the streaming
// reader (as a browser decodes a body while it arrives).
func zstdDecodings(t *testing.T, coded []byte) map[string][]byte {
	t.Helper()
	d, err := zstd.NewReader(nil)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	all, err := d.DecodeAll(coded, nil)
	if err != nil {
		t.Fatalf("DecodeAll: %v", err)
	}
	if err := d.Reset(bytes.NewReader(coded)); err != nil {
		t.Fatal(err)
	}
	var streamed bytes.Buffer
	if _, err := streamed.ReadFrom(d); err != nil {
		t.Fatalf("streaming decoder: %v", err)
	}
	return map[string][]byte{"DecodeAll": all, "streaming": streamed.Bytes()}
}

// Syncs answered by the same slice reads compress each run of messages
// once: the second answer carries the first one's frames as they are, and
// each answer decodes to exactly its JSON.
func TestSharedRunsAreCompressedOnceAndSplicedIntoEachAnswer(t *testing.T) {
	shared, frames := newSharedEncodings(), newSharedFrames()
	enc, err := zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedFastest))
	if err != nil {
		t.Fatal(err)
	}
	first, older := groupEntries("g1", 100, 40), groupEntries("g1", 60, 40)
	other := groupEntries("g2", 1, 30)
	// answer is one sync's answer: plain, and coded as spliced frames.
	answer := func(device string, unread uint64, olderKept int) (plain []byte, coded *codedAnswer) {
		t.Helper()
		msgs := append(append([]*schemas.Sequenced{}, older[len(older)-olderKept:]...), first...)
		res := &readpath.SyncResult{
			Mentions: []readpath.SyncMention{{Conv: "g2", Message: other[3]}},
			Convs: []readpath.SyncConv{
				{Conv: "g1", Type: schemas.ConvType_CONV_TYPE_GROUP, Epoch: 1, MaxSeq: 139, Unread: unread, Messages: msgs, Older: olderKept, HasMore: true},
				{Conv: "g2", Type: schemas.ConvType_CONV_TYPE_GROUP, Epoch: 1, MaxSeq: 30, Unread: unread, Messages: other},
				{Conv: "g3", Type: schemas.ConvType_CONV_TYPE_GROUP, Epoch: 1, MaxSeq: 1, Unread: 1, Messages: groupEntries("g3", 1, 1)},
			},
			Summaries: []readpath.SyncSummary{{Conv: "g4", Type: schemas.ConvType_CONV_TYPE_GROUP, Epoch: 1, MaxSeq: 5, Unread: 5}},
		}
		sizer := func() *syncSizer {
			z := newSyncSizer(context.Background(), device, (&Server{}).openMessage)
			z.shared = shared
			return z
		}
		plain, err := sizer().encode(res)
		if err != nil {
			t.Fatal(err)
		}
		if want := marshalSyncAnswer(t, device, res); !bytes.Equal(plain, want) {
			t.Fatalf("%s: the answer's JSON differs:\n got %s\nwant %s", device, plain, want)
		}
		if coded, err = sizer().encodeZstd(res, enc, frames); err != nil {
			t.Fatal(err)
		}
		return plain, coded
	}
	tests := []struct {
		device    string
		unread    uint64
		olderKept int
		frames    int // distinct runs compressed so far
	}{
		{"a", 139, 12, 3}, // the extension, the first slice, g2 (not g3's one message)
		{"b", 7, 12, 3},   // other counters: its own bytes differ, the runs do not
		{"c", 1234, 0, 3}, // no second pass: the first slice and g2 still shared
		{"d", 139, 40, 4}, // a longer extension: a run of its own
	}
	var coded [][]byte
	for _, tc := range tests {
		plain, a := answer(tc.device, tc.unread, tc.olderKept)
		if a.frames == nil || a.plainBytes != len(plain) {
			t.Fatalf("%s: %d frames counting %d plain bytes; want frames counting the answer's %d", tc.device, len(a.frames), a.plainBytes, len(plain))
		}
		wire := bytes.Join(a.frames, nil)
		if len(wire) != a.codedBytes() {
			t.Fatalf("%s: the frames hold %d bytes, the answer says %d", tc.device, len(wire), a.codedBytes())
		}
		for how, got := range zstdDecodings(t, wire) {
			if !bytes.Equal(got, plain) {
				t.Fatalf("%s: %s decodes the spliced frames to another answer:\n got %s\nwant %s", tc.device, how, got, plain)
			}
		}
		if len(wire) >= len(plain)/2 {
			t.Fatalf("%s: %d bytes coded of %d: the runs were not compressed", tc.device, len(wire), len(plain))
		}
		if n := frames.compressed(); n != tc.frames {
			t.Fatalf("after %s, %d runs were compressed, want %d", tc.device, n, tc.frames)
		}
		coded = append(coded, wire)
	}
	// The first slice's run and g2's: the same frame in every answer.
	firstRun := frames.frame(messageRun{first: first[0], n: len(first)}, nil, enc)
	g2Run := frames.frame(messageRun{first: other[0], n: len(other)}, nil, enc)
	for i, out := range coded {
		if !bytes.Contains(out, firstRun) || !bytes.Contains(out, g2Run) {
			t.Fatalf("answer %s does not carry the shared runs' frames as they were compressed first", tests[i].device)
		}
	}
	runtime.KeepAlive(first)
	runtime.KeepAlive(older)
	runtime.KeepAlive(other)
	first, older, other = nil, nil, nil
	deadline := time.Now().Add(5 * time.Second)
	for frames.len() > 0 {
		if time.Now().After(deadline) {
			t.Fatalf("%d runs' frames still kept 5 s after their entries were dropped", frames.len())
		}
		runtime.GC()
		time.Sleep(10 * time.Millisecond)
	}
}

// A raw frame holds its bytes as they are, whatever their length: the
// content size in each of its widths, and more than one block.
func TestRawFramesDecodeToTheirBytesAtEveryLength(t *testing.T) {
	d, err := zstd.NewReader(nil)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	cli, _ := exec.LookPath("zstd") // the reference decoder, where installed
	for _, n := range []int{1, 255, 256, 257, 65535, 65536 + 255, 65536 + 256, maxRawBlock, maxRawBlock + 1, 3*maxRawBlock + 7} {
		plain := make([]byte, n)
		for i := range plain {
			plain[i] = byte(i*7 + i/251)
		}
		// Two frames in a row, as an answer splices them.
		coded := appendRawZstdFrame(appendRawZstdFrame(nil, plain), []byte("tail"))
		want := append(append([]byte{}, plain...), "tail"...)
		got, err := d.DecodeAll(coded, nil)
		if err != nil || !bytes.Equal(got, want) {
			t.Fatalf("%d bytes: decoded %d bytes, %v; want them back", n, len(got), err)
		}
		if cli == "" {
			continue
		}
		cmd := exec.Command(cli, "-d", "-c", "-q")
		cmd.Stdin = bytes.NewReader(coded)
		out, err := cmd.Output()
		if err != nil || !bytes.Equal(out, want) {
			t.Fatalf("%d bytes: the zstd program decoded %d bytes, %v; want them back", n, len(out), err)
		}
	}
}

// Over HTTP, a sync answered in zstd (spliced frames) and in gzip decode
// to the answer identity brings, and the Go client reads it.
func TestASplicedSyncAnswerDecodesToTheIdentityAnswer(t *testing.T) {
	e := newEnv(t, envOptions{})
	e.runPipeline()
	ann, bob := e.token("ann", ""), e.token("bob", "bob-phone")
	e.produce(founding("team", "ann", "bob"))
	for i := range 60 {
		e.produce(textMsg("team", fmt.Sprintf("m%02d", i), "ann"))
	}
	eventually(t, "the messages are sequenced", func() (bool, string) {
		var p tPage
		code, data := e.call("GET", "/v1/conversations/team/messages?after=0&limit=200", ann, nil)
		if code != http.StatusOK || json.Unmarshal(data, &p) != nil {
			return false, fmt.Sprintf("%d %s", code, data)
		}
		return len(p.Messages) == 61, fmt.Sprintf("%d messages", len(p.Messages))
	})
	syncIn := func(accept string) (string, []byte) {
		t.Helper()
		resp, data := roundTripAccepting(t, e.request("POST", "/v1/sync", bob, map[string]any{}), accept)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("sync in %q: %d: %s", accept, resp.StatusCode, data)
		}
		return resp.Header.Get("Content-Encoding"), data
	}
	_, plain := syncIn("")
	if !bytes.Contains(plain, []byte(`"m59"`)) && !bytes.Contains(plain, []byte(`m59`)) {
		t.Fatalf("the identity answer holds no message: %s", plain)
	}
	for _, coding := range []string{"zstd", "gzip"} {
		got, coded := syncIn(coding)
		if got != coding {
			t.Fatalf("asked %s, answered in %q", coding, got)
		}
		if coding == "zstd" && bytes.Count(coded, []byte{0x28, 0xB5, 0x2F, 0xFD}) < 3 {
			t.Fatalf("the zstd answer is not spliced: %d bytes in fewer than 3 frames", len(coded))
		}
		decoded, err := decodedAnswer(coding, coded)
		if err != nil || !bytes.Equal(decoded, plain) {
			t.Fatalf("%s answer decodes to %s (%v)\nwant %s", coding, decoded, err, plain)
		}
	}
	c := sdk.New(e.srv.URL, bob, &http.Client{})
	resp, wire, err := c.Sync(context.Background(), sdk.SyncRequest{})
	if err != nil {
		t.Fatalf("the Go client's sync: %v", err)
	}
	var want sdk.SyncResponse
	if err := json.Unmarshal(plain, &want); err != nil {
		t.Fatal(err)
	}
	if wire >= len(plain) || len(resp.Conversations) != 1 || len(resp.Conversations[0].Messages) != len(want.Conversations[0].Messages) {
		t.Fatalf("the Go client read %d bytes on the wire (identity %d) and %d conversations; want fewer bytes and the identity answer's",
			wire, len(plain), len(resp.Conversations))
	}
}
