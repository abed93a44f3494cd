package client

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/offlinebox/offlinebox/jsontok"
)

// tokenizerInputs are values of every kind, well-formed or not, and the
// answers and frames the decoders' own tests read: the tokenizer under
// the decoders must take them as encoding/json does.
func tokenizerInputs() []string {
	inputs := []string{
		`0`, `-0`, `-`, `01`, `1.`, `.5`, `1.5e+3`, `1E-2`, `1e`, `1e+`, `-9223372036854775809`, `2.5e-3x`,
		`""`, `"a\"b\\c\/d\b\f\n\r\t"`, `"\u00e9\u4F60\ud83d\ude00"`, `"\ud83d"`, `"\ude00x"`, `"\ud83d\u0041"`,
		`"\u12"`, `"\x"`, `"abc`, `"a` + "\x01" + `b"`, "\"raw \xe4\xbd\xa0 bad \xc3\x28 \xf0\x9f\x98\"", `"\`,
		`true`, `false`, `null`, `tru`, `nul`, `truex`, `[]`, `[1,]`, `[,1]`, `[1 2]`, `{}`, `{"a":1,}`, `{"a" 1}`,
		`{a:1}`, `{"a":[{"b":null}],"c":{"d":[true,false,"x"]}}`, `[[[]]]`, ` {} `, "\t[\n1\r]", `{} {}`, ``, ` `,
		"\ufeff{}", `{"a":NaN}`, `{"a":+1}`, `[` + strings.Repeat(`"long plain string "`, 20) + `]`,
		strings.Repeat("[", 10000) + strings.Repeat("]", 10000), strings.Repeat("[", 10001) + strings.Repeat("]", 10001),
	}
	for _, in := range differentialInputs() {
		inputs = append(inputs, string(in.data))
	}
	return append(inputs, liveFrames()...)
}

func TestTheTokenizerAcceptsWhatEncodingJSONAccepts(t *testing.T) {
	for _, in := range tokenizerInputs() {
		var tk jsontok.Tokenizer
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
		var tk jsontok.Tokenizer
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
