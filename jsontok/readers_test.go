package jsontok

import (
	"encoding/json"
	"errors"
	"testing"
)

func TestAStrictWalkRefusesStringsEncodingJSONWouldRewrite(t *testing.T) {
	tests := []struct {
		name, in    string
		want        string // the string read, when valid
		invalid     string // what the strict walk says is invalid
		malformedAt int    // offset of the syntax error kept; -1: none
	}{
		{"plain", `"abc"`, "abc", "", -1},
		{"escapes and a surrogate pair", `"\u00e9\ud83d\ude00\n\""`, "é😀\n\"", "", -1},
		{"valid UTF-8 as it is", `"héllo 你"`, "héllo 你", "", -1},
		{"a raw invalid byte", "\"ab\xff\"", "", "byte 0xff at offset 3", -1},
		{"a UTF-8 encoded surrogate", "\"\xed\xa0\x80\"", "", "byte 0xed at offset 1", -1},
		{"a lone high surrogate", `"x\ud800"`, "", `lone surrogate \ud800 at offset 2`, -1},
		{"a lone low surrogate", `"\udc00x"`, "", `lone surrogate \udc00 at offset 1`, -1},
		{"a high surrogate before a non-surrogate", `"\ud800\u0041"`, "", `lone surrogate \ud800 at offset 1`, -1},
		{"the first fault is the one named", "\"\xff\\ud800\"", "", "byte 0xff at offset 1", -1},
		{"a malformed escape, at its backslash", `"ab\x"`, "", "", 3},
		{"a short \\u, at its backslash", `"ab\u12"`, "", "", 3},
		{"an escape cut short, at its backslash", `"ab\`, "", "", 3},
		{"a control character", "\"a\tb\"", "", "", 2},
		{"unterminated", `"abc`, "", "", 4},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var tk Tokenizer
			tk.ResetStrict([]byte(tt.in))
			s := tk.StringBytes()
			var invalid string
			var ie *InvalidTextError
			if errors.As(tk.Err(), &ie) {
				invalid = ie.What
			}
			switch {
			case invalid != tt.invalid:
				t.Fatalf("invalid %q (error %v); want %q", invalid, tk.Err(), tt.invalid)
			case tt.malformedAt >= 0 && (tk.Err() == nil || tk.Pos() != tt.malformedAt):
				t.Fatalf("error %v at %d; want one at %d", tk.Err(), tk.Pos(), tt.malformedAt)
			case tt.malformedAt < 0 && invalid == "" && tk.Err() != nil:
				t.Fatalf("error %v; want none", tk.Err())
			case invalid == "" && tt.malformedAt < 0 && string(s) != tt.want:
				t.Fatalf("read %q; want %q", s, tt.want)
			}
			if invalid == "" && tt.malformedAt < 0 {
				var std string
				if err := json.Unmarshal([]byte(tt.in), &std); err != nil || std != string(s) {
					t.Fatalf("encoding/json reads %q (%v); the strict walk %q", std, err, s)
				}
			}
		})
	}
}

func TestBufferedSaysWhetherTheNextStringOverwritesWhatWasRead(t *testing.T) {
	var tk Tokenizer
	tk.Reset([]byte(`["plain","esc\naped"]`))
	tk.Open('[')
	first := true
	tk.More(&first, ']')
	plain := tk.StringBytes()
	tk.More(&first, ']')
	escaped := tk.StringBytes()
	if tk.Buffered(plain) || !tk.Buffered(escaped) {
		t.Fatalf("plain buffered %v, escaped buffered %v; want false, true", tk.Buffered(plain), tk.Buffered(escaped))
	}
}

// readAckFrame reads {"type":"ack","acks":[{"conv_id":…,"seq":N}]} as a
// fast path does: plain strings, plain unsigned integers, anything else
// refused so that a slower reader decides.
func readAckFrame(data []byte) (conv string, seq uint64, ok bool) {
	var tk Tokenizer
	tk.Reset(data)
	if !tk.Consume('{') {
		return "", 0, false
	}
	for first := true; !tk.Consume('}'); first = false {
		if !first && !tk.Consume(',') {
			return "", 0, false
		}
		key, kok := tk.PlainString()
		if !kok || !tk.Consume(':') {
			return "", 0, false
		}
		switch string(key) {
		case "type":
			if v, vok := tk.PlainString(); !vok || string(v) != "ack" {
				return "", 0, false
			}
		case "acks":
			if !tk.Consume('[') || !tk.Consume('{') {
				return "", 0, false
			}
			for f := true; !tk.Consume('}'); f = false {
				if !f && !tk.Consume(',') {
					return "", 0, false
				}
				k, kok := tk.PlainString()
				if !kok || !tk.Consume(':') {
					return "", 0, false
				}
				switch string(k) {
				case "conv_id":
					v, vok := tk.PlainString()
					if !vok {
						return "", 0, false
					}
					conv = string(v)
				case "seq":
					var sok bool
					if seq, sok = Uint(tk.Number()); !sok || tk.Err() != nil {
						return "", 0, false
					}
				default:
					return "", 0, false
				}
			}
			if !tk.Consume(']') {
				return "", 0, false
			}
		default:
			return "", 0, false
		}
	}
	return conv, seq, tk.End() == nil
}

func TestAFastPathReadsAPlainFrameAndRefusesTheRest(t *testing.T) {
	tests := []struct {
		name, in string
		conv     string
		seq      uint64
		ok       bool
	}{
		{"plain", ` {"type" : "ack", "acks":[{"conv_id":"g1","seq":18446744073709551615}]} `, "g1", 18446744073709551615, true},
		{"an escape", `{"type":"ack","acks":[{"conv_id":"g\u0031","seq":1}]}`, "", 0, false},
		{"non-ASCII", `{"type":"ack","acks":[{"conv_id":"gé","seq":1}]}`, "", 0, false},
		{"DEL", "{\"type\":\"ack\",\"acks\":[{\"conv_id\":\"g\x7f\",\"seq\":1}]}", "", 0, false},
		{"negative", `{"type":"ack","acks":[{"conv_id":"g","seq":-1}]}`, "", 0, false},
		{"a fraction", `{"type":"ack","acks":[{"conv_id":"g","seq":1.0}]}`, "", 0, false},
		{"an exponent", `{"type":"ack","acks":[{"conv_id":"g","seq":1e3}]}`, "", 0, false},
		{"a leading zero", `{"type":"ack","acks":[{"conv_id":"g","seq":01}]}`, "", 0, false},
		{"an overflow", `{"type":"ack","acks":[{"conv_id":"g","seq":18446744073709551616}]}`, "", 0, false},
		{"trailing data", `{"type":"ack","acks":[{"conv_id":"g","seq":1}]}x`, "", 0, false},
		{"cut short", `{"type":"ack","acks":[{"conv_id":"g","seq":1}`, "", 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			conv, seq, ok := readAckFrame([]byte(tt.in))
			if ok != tt.ok || (ok && (conv != tt.conv || seq != tt.seq)) {
				t.Fatalf("read %q %d ok %v; want %q %d ok %v", conv, seq, ok, tt.conv, tt.seq, tt.ok)
			}
		})
	}
}

func TestUintTakesWhatParseUintTakesOfJSONNumbers(t *testing.T) {
	tests := []struct {
		in   string
		want uint64
		ok   bool
	}{
		{"0", 0, true}, {"7", 7, true}, {"1234567890123456789", 1234567890123456789, true},
		{"18446744073709551615", 18446744073709551615, true}, {"18446744073709551616", 0, false},
		{"99999999999999999999", 0, false}, {"100000000000000000000", 0, false},
		{"-1", 0, false}, {"1.5", 0, false}, {"1e3", 0, false}, {"", 0, false},
	}
	for _, tt := range tests {
		got, ok := Uint([]byte(tt.in))
		if ok != tt.ok || got != tt.want {
			t.Errorf("Uint(%q) = %d, %v; want %d, %v", tt.in, got, ok, tt.want, tt.ok)
		}
	}
}
