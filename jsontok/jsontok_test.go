package jsontok

import (
	"encoding/json"
	"strings"
	"testing"
)

// tokenizerInputs are values of every kind, well-formed or not, and the
// answers and frames the decoders' own tests read.
// tokenizerInputs are values of every kind, well-formed or not.
func tokenizerInputs() []string {
	return []string{
		`0`, `-0`, `-`, `01`, `1.`, `.5`, `1.5e+3`, `1E-2`, `1e`, `1e+`, `-9223372036854775809`, `2.5e-3x`,
		`""`, `"a\"b\\c\/d\b\f\n\r\t"`, `"\u00e9\u4F60\ud83d\ude00"`, `"\ud83d"`, `"\ude00x"`, `"\ud83d\u0041"`,
		`"\u12"`, `"\x"`, `"abc`, `"a` + "\x01" + `b"`, "\"raw \xe4\xbd\xa0 bad \xc3\x28 \xf0\x9f\x98\"", `"\`,
		`true`, `false`, `null`, `tru`, `nul`, `truex`, `[]`, `[1,]`, `[,1]`, `[1 2]`, `{}`, `{"a":1,}`, `{"a" 1}`,
		`{a:1}`, `{"a":[{"b":null}],"c":{"d":[true,false,"x"]}}`, `[[[]]]`, ` {} `, "\t[\n1\r]", `{} {}`, ``, ` `,
		"\ufeff{}", `{"a":NaN}`, `{"a":+1}`, `[` + strings.Repeat(`"long plain string "`, 20) + `]`,
		strings.Repeat("[", 10000) + strings.Repeat("]", 10000), strings.Repeat("[", 10001) + strings.Repeat("]", 10001),
	}
}

func TestTheTokenizerAcceptsWhatEncodingJSONAccepts(t *testing.T) {
	for _, in := range tokenizerInputs() {
		var tk Tokenizer
		tk.Reset([]byte(in))
		tk.Skip()
		err := tk.End()
		if valid := json.Valid([]byte(in)); valid != (err == nil) {
			t.Errorf("%.60q: encoding/json says valid=%v, the tokenizer says %v", in, valid, err)
		}
	}
}

func TestTheTokenizerUnescapesStringsAsEncodingJSONDoes(t *testing.T) {
	for _, in := range tokenizerInputs() {
		if !strings.HasPrefix(in, `"`) {
			continue
		}
		var want string
		werr := json.Unmarshal([]byte(in), &want)
		var tk Tokenizer
		tk.Reset([]byte(in))
		got := string(tk.StringBytes())
		gerr := tk.End()
		switch {
		case (werr == nil) != (gerr == nil):
			t.Errorf("%.60q: encoding/json says %v, the tokenizer says %v", in, werr, gerr)
		case werr == nil && got != want:
			t.Errorf("%.60q: the tokenizer gives %q, encoding/json %q", in, got, want)
		}
	}
}

func TestTheTokenizerWalksAnObjectsKeysAndValuesInOrder(t *testing.T) {
	tests := []struct {
		name, in string
		want     []string // key=value text, in order
		wantErr  bool
	}{
		{"an empty object", `{}`, nil, false},
		{"keys with values of each kind", ` { "a" : 1 , "b\u0021":"x", "c":[1,{}], "d":null } `,
			[]string{"a=1", "b!=x", "c=[1,{}]", "d=null"}, false},
		{"a null is no object", `null`, nil, false},
		{"a missing colon", `{"a" 1}`, nil, true},
		{"a trailing comma", `{"a":1,}`, []string{"a=1"}, true},
		{"a key that is no string", `{1:2}`, nil, true},
		{"trailing bytes", `{"a":1} x`, []string{"a=1"}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var tk Tokenizer
			tk.Reset([]byte(tt.in))
			var got []string
			if tk.Open('{') {
				for first := true; tk.More(&first, '}'); {
					k := string(tk.Key())
					from := tk.pos
					if tk.Peek() == '"' {
						k += "=" + string(tk.StringBytes())
					} else {
						tk.Skip()
						k += "=" + strings.TrimSpace(string(tk.data[from:tk.pos]))
					}
					if tk.err == nil {
						got = append(got, k)
					}
				}
			}
			err := tk.End()
			if (err != nil) != tt.wantErr {
				t.Fatalf("error %v; want one: %v", err, tt.wantErr)
			}
			if strings.Join(got, " ") != strings.Join(tt.want, " ") {
				t.Errorf("walked %q; want %q", got, tt.want)
			}
		})
	}
}

func TestTheTokenizerReadsANumbersTextCheckedAgainstTheGrammar(t *testing.T) {
	tests := []struct {
		in, want string
		ok       bool
	}{
		{"0", "0", true}, {"-12", "-12", true}, {"1.25e-3,", "1.25e-3", true}, {"7]", "7", true},
		{"01", "0", true}, // the tokenizer reads one number; the 1 after it is for end to refuse
		{"-", "", false}, {"1.", "", false}, {"1e", "", false}, {"+1", "", false}, {".5", "", false},
	}
	for _, tt := range tests {
		var tk Tokenizer
		tk.Reset([]byte(tt.in))
		got := string(tk.Number())
		if (tk.err == nil) != tt.ok || got != tt.want {
			t.Errorf("%q: read %q (error %v); want %q, ok %v", tt.in, got, tk.err, tt.want, tt.ok)
		}
	}
}
