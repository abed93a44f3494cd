package client

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"unsafe"
)

// The answers as the server writes them: api/message_json.go writes what
// json.Marshal writes for these (its tests check it byte for byte), so
// json.Marshal of these mirrors gives the server's bytes, escapes
// included.

type serverMessage struct {
	ConvID      string   `json:"conv_id,omitempty"`
	Seq         uint64   `json:"seq"`
	Epoch       uint64   `json:"epoch,omitempty"`
	WriteTimeMS int64    `json:"write_time_ms"`
	ClientMsgID string   `json:"client_msg_id"`
	ConvType    string   `json:"conv_type,omitempty"`
	Kind        string   `json:"kind"`
	Sender      string   `json:"sender"`
	Recipients  []string `json:"recipients,omitempty"`
	Mentions    []string `json:"mentions,omitempty"`
	MentionAll  bool     `json:"mention_all,omitempty"`
	ContentType string   `json:"content_type,omitempty"`
	Text        *string  `json:"text,omitempty"`
	Body        []byte   `json:"body,omitempty"`
	SendTimeMS  int64    `json:"send_time_ms,omitempty"`
}

type serverGap struct {
	From uint64 `json:"from"`
	To   uint64 `json:"to"`
}

type serverConv struct {
	ConvID           string          `json:"conv_id"`
	Kind             string          `json:"kind"`
	Large            bool            `json:"large"`
	Epoch            uint64          `json:"epoch"`
	MaxSeq           uint64          `json:"max_seq"`
	Unread           uint64          `json:"unread"`
	HasMore          bool            `json:"has_more"`
	Gap              *serverGap      `json:"gap,omitempty"`
	Rebase           bool            `json:"rebase"`
	RebaseReason     string          `json:"rebase_reason,omitempty"`
	Incomplete       bool            `json:"incomplete"`
	Left             bool            `json:"left,omitempty"`
	PeerDeliveredSeq *uint64         `json:"peer_delivered_seq,omitempty"`
	PeerReadSeq      *uint64         `json:"peer_read_seq,omitempty"`
	Messages         []serverMessage `json:"messages"`
}

type serverMention struct {
	ConvID  string        `json:"conv_id"`
	All     bool          `json:"all"`
	Message serverMessage `json:"message"`
}

type serverSummary struct {
	ConvID   string `json:"conv_id"`
	Kind     string `json:"kind"`
	Large    bool   `json:"large"`
	Epoch    uint64 `json:"epoch"`
	MaxSeq   uint64 `json:"max_seq"`
	Unread   uint64 `json:"unread"`
	Mentions int    `json:"mentions"`
}

type serverSync struct {
	DeviceID      string          `json:"device_id"`
	Resync        bool            `json:"resync"`
	Mentions      []serverMention `json:"mentions"`
	Conversations []serverConv    `json:"conversations"`
	Summaries     []serverSummary `json:"summaries"`
	Omitted       int             `json:"omitted,omitempty"`
}

type serverPage struct {
	ConvID     string          `json:"conv_id"`
	Epoch      uint64          `json:"epoch"`
	ConvType   string          `json:"conv_type,omitempty"`
	MaxSeq     uint64          `json:"max_seq"`
	FirstSeq   uint64          `json:"first_seq"`
	HasMore    bool            `json:"has_more"`
	Incomplete bool            `json:"incomplete"`
	Messages   []serverMessage `json:"messages"`
}

// awkwardTexts are the bodies and names where a hand-written decoder is
// most likely to part from encoding/json: escapes of every kind (the
// server escapes <, > and &, U+2028 and U+2029), runes outside the BMP
// (a surrogate pair once escaped), Chinese text, and invalid UTF-8 (the
// server writes it as \ufffd; a raw one is decoded as U+FFFD too).
var awkwardTexts = []string{
	"", "plain", `quo"te\back/slash`, "<script>&amp;</script>", "tab\tnew\nline\rcr\bbs\fff",
	"\x00\x01\x1f\x7f", "héllo wörld ✓ 𝄞", "line\u2028para\u2029end", "bad\xffutf8\xc3", "\xe2\x80",
	"今天下午三点开会，请准时参加。", "混合 mixed 文本 with emoji 😀 and <tags>",
}

var chineseWords = []string{"你好", "今天", "开会", "项目", "进度", "明天", "讨论", "方案", "没问题", "收到"}
var englishWords = []string{"hello", "meeting", "at", "three", "the", "project", "is", "on", "track", "thanks"}

// chatText is a body like the storm's: 50 to 400 bytes, Chinese or English.
func chatText(rng *rand.Rand) string {
	words := englishWords
	if rng.IntN(10) < 6 {
		words = chineseWords
	}
	n := 50 + rng.IntN(350)
	var b strings.Builder
	for b.Len() < n {
		b.WriteString(words[rng.IntN(len(words))])
		if words[0] == "hello" {
			b.WriteByte(' ')
		}
	}
	return b.String()
}

// serverMessageOf is message i as the server would send it, in the full
// form or the slice form; odd ones are awkward.
func serverMessageOf(rng *rand.Rand, conv string, epoch uint64, seq uint64, full bool, awkward bool) serverMessage {
	m := serverMessage{Seq: seq, WriteTimeMS: 1_700_000_000_000 + int64(seq), ClientMsgID: fmt.Sprintf("c-%d-%d", seq, rng.Uint32()),
		Kind: "message", Sender: fmt.Sprintf("u%d", rng.IntN(50))}
	if full {
		m.ConvID, m.Epoch, m.ConvType = conv, epoch, "group"
	}
	switch rng.IntN(10) {
	case 0:
		m.ContentType, m.Body = "image/png", []byte{0x89, 'P', 'N', 'G', 0, 1, 2, byte(rng.IntN(256))}
	case 1:
		t := "**bold** " + chatText(rng)
		m.ContentType, m.Text = "text/markdown", &t
	case 2:
		m.Kind, m.Recipients = "member_join", []string{"u1", "u2"}
		t := ""
		m.Text = &t
	default:
		t := chatText(rng)
		m.Text = &t
	}
	if rng.IntN(8) == 0 {
		m.Mentions = []string{"u3", "u7"}
	}
	if rng.IntN(20) == 0 {
		m.MentionAll = true
	}
	if rng.IntN(4) == 0 {
		m.SendTimeMS = m.WriteTimeMS - 5
	}
	if awkward {
		s := awkwardTexts[rng.IntN(len(awkwardTexts))]
		m.Sender, m.ClientMsgID = s, s+m.ClientMsgID
		if rng.IntN(2) == 0 {
			m.Text, m.Body, m.ContentType = &s, nil, "text/x-"+s
		} else {
			m.Text, m.Body, m.ContentType = nil, []byte(s), s
		}
		m.Recipients = []string{s, "u1"}
	}
	return m
}

// serverSyncAnswer is a sync answer of convs conversations of perConv
// messages each, with mentions, gaps, rebases and summaries; awkward
// makes one message in five awkward.
func serverSyncAnswer(seed uint64, convs, perConv int, awkward bool) []byte {
	rng := rand.New(rand.NewPCG(seed, 1))
	a := serverSync{DeviceID: "d1", Mentions: []serverMention{}, Conversations: []serverConv{}, Summaries: []serverSummary{}}
	for c := range convs {
		conv := fmt.Sprintf("g-%d", c)
		sc := serverConv{ConvID: conv, Kind: "group", Large: c%7 == 3, Epoch: uint64(c%3 + 1), MaxSeq: uint64(10_000 + c),
			Unread: uint64(perConv + c), HasMore: c%2 == 0, Incomplete: c%9 == 4, Left: c%11 == 5}
		if c%4 == 1 {
			sc.Gap = &serverGap{From: 10, To: uint64(20 + c)}
		}
		if c%5 == 2 {
			sc.Rebase, sc.RebaseReason = true, "epoch_changed"
		}
		if c%6 == 0 {
			sc.Kind = "direct"
			d, rd := uint64(5), uint64(3)
			sc.PeerDeliveredSeq, sc.PeerReadSeq = &d, &rd
		}
		sc.Messages = make([]serverMessage, perConv)
		for i := range sc.Messages {
			sc.Messages[i] = serverMessageOf(rng, conv, sc.Epoch, sc.MaxSeq-uint64(perConv-i), false, awkward && rng.IntN(5) == 0)
		}
		a.Conversations = append(a.Conversations, sc)
		if c%3 == 0 {
			a.Mentions = append(a.Mentions, serverMention{ConvID: conv, All: c%2 == 0,
				Message: serverMessageOf(rng, conv, sc.Epoch, 77, true, awkward && c%2 == 0)})
		}
	}
	for c := range convs / 2 {
		a.Summaries = append(a.Summaries, serverSummary{ConvID: fmt.Sprintf("s-%d", c), Kind: "group", Epoch: 1, MaxSeq: 9, Unread: 2})
	}
	if convs > 3 {
		a.Omitted = convs / 3
	}
	b, err := json.Marshal(a)
	if err != nil {
		panic(err)
	}
	return b
}

func serverPageAnswer(seed uint64, n int, awkward bool) []byte {
	rng := rand.New(rand.NewPCG(seed, 2))
	p := serverPage{ConvID: "g-page", Epoch: 3, ConvType: "group", MaxSeq: 500, FirstSeq: 400, HasMore: true, Messages: []serverMessage{}}
	for i := range n {
		p.Messages = append(p.Messages, serverMessageOf(rng, p.ConvID, p.Epoch, uint64(400+i), false, awkward && i%3 == 0))
	}
	b, err := json.Marshal(p)
	if err != nil {
		panic(err)
	}
	return b
}

func serverConvList(seed uint64, n int) []byte {
	rng := rand.New(rand.NewPCG(seed, 3))
	type preview struct {
		Seq    uint64 `json:"seq"`
		Sender string `json:"sender"`
		TS     int64  `json:"ts"`
		Text   string `json:"text"`
	}
	type item struct {
		ConvID       string   `json:"conv_id"`
		Kind         string   `json:"kind"`
		Large        bool     `json:"large"`
		Unread       uint64   `json:"unread"`
		LastSeq      uint64   `json:"last_seq"`
		ReadSeq      uint64   `json:"read_seq"`
		LastActiveMS int64    `json:"last_active_ms"`
		Preview      *preview `json:"preview"`
		Mentions     int      `json:"mentions"`
		AckedSeq     uint64   `json:"acked_seq"`
		Left         bool     `json:"left"`
		PeerReadSeq  *uint64  `json:"peer_read_seq,omitempty"`
	}
	l := struct {
		Conversations []item `json:"conversations"`
		Next          string `json:"next,omitempty"`
	}{Conversations: []item{}, Next: "cursor+/=="}
	for i := range n {
		it := item{ConvID: fmt.Sprintf("g-%d", i), Kind: "group", Large: i%5 == 0, Unread: uint64(i), LastSeq: uint64(100 + i),
			ReadSeq: uint64(90 + i), LastActiveMS: 1_700_000_000_000 + int64(i), Mentions: i % 3, AckedSeq: uint64(95 + i)}
		if i%4 != 3 {
			it.Preview = &preview{Seq: it.LastSeq, Sender: "u1", TS: it.LastActiveMS, Text: awkwardTexts[rng.IntN(len(awkwardTexts))]}
		}
		if i%6 == 0 {
			s := uint64(4)
			it.PeerReadSeq = &s
		}
		l.Conversations = append(l.Conversations, it)
	}
	b, err := json.Marshal(l)
	if err != nil {
		panic(err)
	}
	return b
}

// handwrittenAnswers are inputs the server does not write but a decoder
// meets: raw invalid UTF-8 and raw runes, every escape, surrogate pairs
// whole and broken, nulls everywhere, unknown keys of every type, and the
// shapes left to encoding/json (repeated keys, keys in another case, a
// body as an array).
var handwrittenAnswers = []string{
	`{}`, `null`, ` {"resync":true} `, `{"resync":false,"omitted":-3}`,
	`{"mentions":[],"conversations":[],"summaries":[]}`,
	`{"mentions":null,"conversations":null,"summaries":null,"resync":null,"omitted":null}`,
	`{"mentions":[null,{"conv_id":null,"all":null,"message":null}],"conversations":[null,{}],"summaries":[null,{}]}`,
	`{"conversations":[{"conv_id":"g","kind":"group","epoch":7,"gap":null,"messages":[null,{}]}]}`,
	`{"conversations":[{"conv_id":"g","gap":{},"messages":[{"seq":1,"text":null,"body":"AAEC"}]}]}`,
	`{"conversations":[{"messages":[{"seq":1,"text":"t","body":"AAEC"}],"conv_id":"later","epoch":2,"kind":"direct"}]}`,
	`{"conversations":[{"conv_id":"g","messages":[{"conv_id":"own","epoch":9,"conv_type":"direct","seq":1}]}]}`,
	`{"conversations":[{"conv_id":"g","messages":[{"seq":1,"body":""},{"seq":2,"body":null},{"seq":3,"text":""}]}]}`,
	`{"conversations":[{"conv_id":"g","messages":[{"seq":1,"body":"QU\nJD"}]}]}`,
	`{"conversations":[{"conv_id":"g","messages":[{"seq":1,"body":"QU\u004aD","text":"\u00e9\u4f60\ud83d\ude00\/"}]}]}`,
	`{"conversations":[{"conv_id":"g","messages":[{"seq":1,"text":"lone \ud83d high, lone \ude00 low, \ud83d\u0041 pair broken, \uDBFF\uDFFF top"}]}]}`,
	"{\"conversations\":[{\"conv_id\":\"g\xff\",\"messages\":[{\"seq\":1,\"sender\":\"\xed\xa0\x80\",\"text\":\"raw \xe4\xbd\xa0 and bad \xc3\x28 \xf0\x9f\x98\"}]}]}",
	`{"conversations":[{"conv_id":"g","messages":[{"seq":1,"recipients":[],"mentions":[null,"a","\u0062"]}]}]}`,
	`{"device_id":"d","unknown":{"a":[1,2.5e-3,-0,true,false,null,"x\"y",{}],"b":[]},"conversations":[{"peer_read_seq":3,"x":[[[]]]}]}`,
	`{"conversations":[{"conv_id":"g","max_seq":18446744073709551615,"unread":0,"epoch":1,"messages":[{"seq":18446744073709551615,"write_time_ms":-9223372036854775808,"send_time_ms":9223372036854775807}]}]}`,
	`{"omitted":9223372036854775807}`, `{"omitted":-9223372036854775808}`,
	`{"\u0072esync":true,"mention\u0073":[]}`,
	// Shapes left to encoding/json.
	`{"resync":true,"resync":false}`, `{"RESYNC":true}`, `{"Conversations":[{"conv_id":"g"}]}`,
	`{"conversations":[{"conv_id":"g","messages":[{"seq":1,"text":"a"}]}],"conversations":[{"messages":[{"content_type":"x"}]}]}`,
	`{"conversations":[{"conv_id":"g","messages":[{"seq":1,"text":"a","text":null,"body":"AAEC"}]}]}`,
	`{"conversations":[{"conv_id":"g","messages":[{"seq":1,"body":[1,2,255]}]}]}`,
	`{"conversations":[{"conv_id":"g","messages":[{"seq":1,"body":[256]}]}]}`,
	`{"conversations":[{"gap":{"from":1},"gap":{"to":2}}]}`,
	"{\"s\u017fq\":1}", `{"conversations":[{"messages":[{"ſeq":5}]}]}`, `{"conversations":[{"messages":[{"K\u0130nd":"x"}]}]}`,
	// Errors, for both.
	``, ` `, `[]`, `"x"`, `1`, `true`, `{`, `}`, `{"resync":tru}`, `{"resync":truex}`, `{"resync":1}`, `{"resync":"true"}`,
	`{"omitted":1.0}`, `{"omitted":1e2}`, `{"omitted":9223372036854775808}`, `{"omitted":"1"}`, `{"omitted":01}`, `{"omitted":-}`,
	`{"conversations":[{"max_seq":-1}]}`, `{"conversations":[{"max_seq":-0}]}`, `{"conversations":[{"max_seq":18446744073709551616}]}`,
	`{"conversations":[{"messages":[{"seq":1.5}]}]}`, `{"conversations":[{"messages":[{"write_time_ms":1e3}]}]}`,
	`{"conversations":[{"messages":[{"body":"!!"}]}]}`, `{"conversations":[{"messages":[{"body":5}]}]}`,
	`{"conversations":[{"messages":[{"text":5}]}]}`, `{"conversations":[{"messages":[{"text":"a\qb"}]}]}`,
	`{"conversations":[{"messages":[{"text":"a\u12"}]}]}`, "{\"conversations\":[{\"messages\":[{\"text\":\"a\x01b\"}]}]}",
	`{"conversations":[{"messages":[{"text":"abc}]}]}`, `{"conversations":[{"messages":[{"recipients":"a"}]}]}`,
	`{"conversations":[{"messages":[{"recipients":[1]}]}]}`, `{"conversations":[{"gap":[]}]}`, `{"conversations":{}}`,
	`{"conversations":[1]}`, `{"mentions":[{"message":[]}]}`, `{"summaries":[{"conv_id":1}]}`, `{"resync":true,}`,
	`{"resync":true}x`, `{"resync":true} {}`, `{"a":[1,]}`, `{"a":[,1]}`, `{"a" 1}`, `{a:1}`, `{"a":.5}`, `{"a":1.}`,
	`{"a":1e}`, `{"a":+1}`, `{"a":NaN}`, "\ufeff{}", `{"a":"\ud83d\ude0"}`, `{"conversations":[{"messages":[{"seq":1}]}]` + "\x00",
	`{"conversations":[{"messages":[{"seq":1,"seq":"x"}]}]}`,
	`{"a":` + strings.Repeat("[", 10001) + strings.Repeat("]", 10001) + `}`,
	`{"a":` + strings.Repeat("[", 9998) + strings.Repeat("]", 9998) + `}`,
	`{"a":` + strings.Repeat("[", 9999) + strings.Repeat("]", 9999) + `}`,
}

// decodersAgree decodes data with the client's reader and with
// encoding/json (through the mirrors) into the same type and says how
// they differ: both must fail, or both give equal values.
func decodersAgree(data []byte) error {
	checks := []struct {
		name string
		got  func() (any, error)
		want func() (any, error)
	}{
		{"sync answer",
			func() (any, error) { var v SyncResponse; err := v.decodeWire(data); return v, err },
			func() (any, error) { var v SyncResponse; err := v.decodeReflect(data); return v, err }},
		{"page",
			func() (any, error) { var v Page; err := v.decodeWire(data); return v, err },
			func() (any, error) { var v Page; err := v.decodeReflect(data); return v, err }},
		{"conversation list",
			func() (any, error) { var v ConvList; err := decodeConvList(&v, data); return v, err },
			func() (any, error) { var v ConvList; err := json.Unmarshal(data, &v); return v, err }},
	}
	for _, c := range checks {
		got, gerr := c.got()
		want, werr := c.want()
		switch {
		case (gerr == nil) != (werr == nil):
			return fmt.Errorf("%s: the reader says %v, encoding/json says %v", c.name, gerr, werr)
		case gerr == nil && !reflect.DeepEqual(got, want):
			return fmt.Errorf("%s: the reader gives\n%#v\nencoding/json gives\n%#v", c.name, got, want)
		}
	}
	return nil
}

func differentialInputs() []struct {
	name string
	data []byte
} {
	var out []struct {
		name string
		data []byte
	}
	add := func(name string, data []byte) {
		out = append(out, struct {
			name string
			data []byte
		}{name, data})
	}
	add("a storm's first answer", serverSyncAnswer(1, 20, 25, false))
	add("an answer with awkward messages", serverSyncAnswer(2, 12, 10, true))
	add("an answer of one conversation", serverSyncAnswer(3, 1, 3, true))
	add("an answer of nothing", serverSyncAnswer(4, 0, 0, false))
	add("a page", serverPageAnswer(5, 40, false))
	add("a page with awkward messages", serverPageAnswer(6, 30, true))
	add("an empty page", serverPageAnswer(7, 0, false))
	add("a conversation list", serverConvList(8, 30))
	add("an empty conversation list", serverConvList(9, 0))
	for _, a := range serverAnswers() {
		add("the server's "+a.name, a.data)
	}
	for i, s := range handwrittenAnswers {
		add(fmt.Sprintf("handwritten %d %.40q", i, s), []byte(s))
	}
	return out
}

// serverAnswers are answers the server's encoder wrote (api's tests keep
// them what it writes: TestTheClientsCopiesOfServerAnswersAreWhatTheEncoderWrites).
func serverAnswers() []struct {
	name string
	data []byte
	read func(*jsonReader)
} {
	answers := []struct {
		name string
		data []byte
		read func(*jsonReader)
	}{
		{name: "sync.json", read: func(r *jsonReader) { r.syncResponse(new(SyncResponse)) }},
		{name: "page.json", read: func(r *jsonReader) { r.page(new(Page)) }},
		{name: "conversations.json", read: func(r *jsonReader) { r.convList(new(ConvList)) }},
	}
	for i := range answers {
		data, err := os.ReadFile(filepath.Join("testdata", "server", answers[i].name))
		if err != nil {
			panic(err)
		}
		answers[i].data = data
	}
	return answers
}

func TestTheReaderDecodesEveryAnswerAsEncodingJSONDoes(t *testing.T) {
	for _, in := range differentialInputs() {
		t.Run(in.name, func(t *testing.T) {
			if err := decodersAgree(in.data); err != nil {
				t.Error(err)
			}
		})
	}
}

func TestTheReaderDecodesTheServersAnswersWithoutFallingBack(t *testing.T) {
	answers := map[string]struct {
		data   []byte
		decode func(*jsonReader)
	}{
		"sync answer":       {serverSyncAnswer(2, 12, 10, true), func(r *jsonReader) { r.syncResponse(new(SyncResponse)) }},
		"page":              {serverPageAnswer(6, 30, true), func(r *jsonReader) { r.page(new(Page)) }},
		"conversation list": {serverConvList(8, 30), func(r *jsonReader) { r.convList(new(ConvList)) }},
	}
	for _, a := range serverAnswers() {
		answers["the server's "+a.name] = struct {
			data   []byte
			decode func(*jsonReader)
		}{a.data, a.read}
	}
	for name, a := range answers {
		t.Run(name, func(t *testing.T) {
			r := newJSONReader(a.data)
			a.decode(r)
			if err := r.End(); err != nil {
				t.Fatalf("the reader left a server answer to encoding/json or failed: %v", err)
			}
		})
	}
}

func TestTheReaderLeavesRepeatedAndCaseFoldedKeysToEncodingJSON(t *testing.T) {
	tests := []struct {
		name, answer string
	}{
		{"a repeated key", `{"resync":true,"resync":false}`},
		{"a key in another case", `{"Resync":true}`},
		{"a key folding to a field through Unicode", "{\"conversations\":[{\"messages\":[{\"\u017feq\":1}]}]}"},
		{"a body as an array of bytes", `{"conversations":[{"messages":[{"body":[1,2]}]}]}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newJSONReader([]byte(tt.answer))
			r.syncResponse(new(SyncResponse))
			if err := r.End(); err != errReflectOnly {
				t.Fatalf("reader: %v; want it to leave the answer to encoding/json", err)
			}
			if err := decodersAgree([]byte(tt.answer)); err != nil {
				t.Fatal(err)
			}
		})
	}
}

func TestTheReaderRefusesMalformedAnswersWithoutAPartialOne(t *testing.T) {
	good := serverSyncAnswer(1, 3, 3, false)
	tests := []struct {
		name   string
		answer []byte
	}{
		{"cut short", good[:len(good)/2]},
		{"trailing bytes", append(append([]byte{}, good...), " x"...)},
		{"a trailing comma", []byte(`{"conversations":[{"conv_id":"g"},]}`)},
		{"a sequence out of range", []byte(`{"conversations":[{"messages":[{"seq":18446744073709551616}]}]}`)},
		{"a negative sequence", []byte(`{"conversations":[{"messages":[{"seq":-1}]}]}`)},
		{"a body not base64", []byte(`{"conversations":[{"messages":[{"body":"@@"}]}]}`)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := SyncResponse{Omitted: 42}
			if err := r.decodeWire(tt.answer); err == nil {
				t.Fatalf("decoded %#v", r)
			}
			if r.Omitted != 42 || r.Conversations != nil {
				t.Errorf("a refused answer changed what it was decoded into: %#v", r)
			}
		})
	}
}

func TestTheReaderInternsRepeatedNamesAndKinds(t *testing.T) {
	// Names that share a slot of the table take turns; these ten do not.
	var answer strings.Builder
	answer.WriteString(`{"conversations":[{"conv_id":"g","messages":[`)
	for i := range 100 {
		if i > 0 {
			answer.WriteByte(',')
		}
		fmt.Fprintf(&answer, `{"seq":%d,"kind":"message","sender":"u%d","mentions":["u%d"]}`, i+1, i%10, (i+3)%10)
	}
	answer.WriteString(`]}]}`)
	var r SyncResponse
	if err := r.decodeWire([]byte(answer.String())); err != nil {
		t.Fatal(err)
	}
	seen := map[string]*byte{}
	for _, m := range r.Conversations[0].Messages {
		for _, s := range []string{m.Sender, m.Kind, m.Mentions[0]} {
			p := unsafe.StringData(s)
			if q, ok := seen[s]; ok && q != p {
				t.Fatalf("%q decoded twice into two strings", s)
			}
			seen[s] = p
		}
	}
	if len(seen) != 11 {
		t.Fatalf("%d distinct strings; want the ten senders and the kind", len(seen))
	}
}

func FuzzDecodeSyncAnswerMatchesEncodingJSON(f *testing.F) {
	// Small seeds: the fuzzer mutates large inputs too slowly to learn
	// from them (the large answers are in the differential test).
	for _, in := range differentialInputs() {
		if len(in.data) <= 6144 {
			f.Add(in.data)
		}
	}
	for seed := range uint64(6) {
		f.Add(serverSyncAnswer(seed, 2, 2, true))
		f.Add(serverPageAnswer(seed, 2, true))
	}
	f.Add(serverConvList(1, 3))
	f.Fuzz(func(t *testing.T, data []byte) {
		if err := decodersAgree(data); err != nil {
			t.Fatal(err)
		}
	})
}

func BenchmarkDecodeSyncAnswer(b *testing.B) {
	answer := serverSyncAnswer(1, 20, 25, false)
	decoders := []struct {
		name   string
		decode func(*SyncResponse) error
	}{
		{"encoding/json mirrors", func(r *SyncResponse) error { return r.decodeReflect(answer) }},
		{"reader", func(r *SyncResponse) error { return r.decodeWire(answer) }},
	}
	for _, d := range decoders {
		b.Run(d.name, func(b *testing.B) {
			b.SetBytes(int64(len(answer)))
			b.ReportAllocs()
			for b.Loop() {
				var r SyncResponse
				if err := d.decode(&r); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// The client decodes the next zstd answer into the buffer of the last
// one, so what a decode gives must hold no part of its input.
func TestADecodedAnswerKeepsNothingOfTheBytesItWasReadFrom(t *testing.T) {
	answers := map[string]struct {
		data   []byte
		decode func([]byte) (any, error)
	}{
		"sync answer": {serverSyncAnswer(2, 12, 10, true), func(b []byte) (any, error) { var v SyncResponse; err := v.decodeWire(b); return v, err }},
		"sync answer left to encoding/json": {[]byte(`{"resync":true,"Resync":true,"conversations":[{"conv_id":"g","messages":[{"text":"t","body":"AAEC"}]}]}`),
			func(b []byte) (any, error) { var v SyncResponse; err := v.decodeWire(b); return v, err }},
		"page":              {serverPageAnswer(6, 30, true), func(b []byte) (any, error) { var v Page; err := v.decodeWire(b); return v, err }},
		"conversation list": {serverConvList(8, 30), func(b []byte) (any, error) { var v ConvList; err := decodeConvList(&v, b); return v, err }},
	}
	for name, a := range answers {
		t.Run(name, func(t *testing.T) {
			buf := append([]byte{}, a.data...)
			got, err := a.decode(buf)
			if err != nil {
				t.Fatal(err)
			}
			for i := range buf {
				buf[i] = 'x'
			}
			want, err := a.decode(a.data)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("overwriting the input changed the decoded answer")
			}
		})
	}
}

// Text bodies share blocks of memory; appending to one must never write
// over the body after it.
func TestAppendingToADecodedBodyLeavesTheNextBodyAsItWas(t *testing.T) {
	var r SyncResponse
	answer := []byte(`{"device_id":"d","resync":false,"mentions":[],"conversations":[{"conv_id":"g","epoch":1,"conv_type":"group",` +
		`"messages":[{"seq":1,"kind":"message","sender":"a","text":"first"},{"seq":2,"kind":"message","sender":"b","text":"second"}]}],"summaries":[],"omitted":0}`)
	if err := r.decodeWire(answer); err != nil {
		t.Fatal(err)
	}
	if len(r.Conversations) != 1 || len(r.Conversations[0].Messages) != 2 {
		t.Fatalf("decoded %+v", r)
	}
	msgs := r.Conversations[0].Messages
	_ = append(msgs[0].Body, "XXXXXXXX"...)
	if string(msgs[0].Body) != "first" || string(msgs[1].Body) != "second" {
		t.Fatalf("bodies after an append to the first: %q, %q", msgs[0].Body, msgs[1].Body)
	}
}
