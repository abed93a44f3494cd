package client

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"unicode/utf16"
	"unicode/utf8"
)

// The JSON tokenizer under the SDK's decoders: a cursor over the bytes
// that checks them as encoding/json checks them (whitespace, the
// structure of objects and arrays with nesting bounded as encoding/json
// bounds it, strings unescaped as encoding/json unescapes them, numbers
// against JSON's grammar, any value skipped with the same checks) and
// knows nothing of the types read from it: jsonread.go reads values of
// the client's types through it, and a reader of other shapes can embed
// it as jsonReader does. Its first error is kept and every step after it
// does nothing, so a walk checks err once, at the end.
//
// A walk goes: open('{'), then for first := true; more(&first, '}'); a
// key() and a value (stringBytes, number, literal, skip or a nested
// open), then end() once the top-level value is read.

// maxNestingDepth is encoding/json's bound on nesting.
const maxNestingDepth = 10000

type tokenizer struct {
	data  []byte
	pos   int
	depth int
	err   error
	// buf holds an unescaped string or key until the next one is read.
	buf []byte
}

// reset starts a walk of data, keeping buf's memory.
func (t *tokenizer) reset(data []byte) {
	t.data, t.pos, t.depth, t.err = data, 0, 0, nil
}

// fail keeps the first error; every step after it does nothing.
func (t *tokenizer) fail(err error) {
	if t.err == nil {
		t.err = err
	}
}

func (t *tokenizer) syntax(what string) {
	if t.pos >= len(t.data) {
		t.fail(fmt.Errorf("invalid JSON: unexpected end of input (%s)", what))
		return
	}
	t.fail(fmt.Errorf("invalid JSON at offset %d: %s, found %q", t.pos, what, t.data[t.pos]))
}

// mismatch reports a value of the wrong type. Whether the rest of the
// input is well-formed does not matter: encoding/json fails on it too.
func (t *tokenizer) mismatch(want string) {
	if t.pos >= len(t.data) {
		t.syntax("expected " + want)
		return
	}
	t.fail(fmt.Errorf("at offset %d: %q does not start %s", t.pos, t.data[t.pos], want))
}

func (t *tokenizer) space() {
	for t.pos < len(t.data) {
		switch t.data[t.pos] {
		case ' ', '\t', '\n', '\r':
			t.pos++
		default:
			return
		}
	}
}

// peek is the first byte of the next value (0 at the end).
func (t *tokenizer) peek() byte {
	t.space()
	if t.pos >= len(t.data) {
		return 0
	}
	return t.data[t.pos]
}

// end checks that nothing but space follows the top-level value.
func (t *tokenizer) end() error {
	if t.err != nil {
		return t.err
	}
	t.space()
	if t.pos != len(t.data) {
		t.syntax("expected the end after the top-level value")
	}
	return t.err
}

// literal consumes word (true, false, null) at pos.
func (t *tokenizer) literal(word string) {
	if len(t.data)-t.pos < len(word) || string(t.data[t.pos:t.pos+len(word)]) != word {
		t.syntax("expected " + word)
		return
	}
	t.pos += len(word)
}

// null consumes a null if one is next; false for any other value (left
// unread) and on an error.
func (t *tokenizer) null() bool {
	if t.err != nil || t.peek() != 'n' {
		return false
	}
	t.literal("null")
	return t.err == nil
}

// open consumes the opening of an object or array ('{' or '['); it is
// false for a null (consumed) and on an error.
func (t *tokenizer) open(c byte) bool {
	if t.err != nil {
		return false
	}
	switch t.peek() {
	case c:
		t.pos++
		t.depth++
		if t.depth > maxNestingDepth {
			t.fail(fmt.Errorf("invalid JSON at offset %d: nested deeper than %d", t.pos, maxNestingDepth))
			return false
		}
		return true
	case 'n':
		t.literal("null")
		return false
	}
	if c == '{' {
		t.mismatch("an object")
	} else {
		t.mismatch("an array")
	}
	return false
}

// more walks the members of an object or the elements of an array opened
// by open: it consumes the separator before the next one, or the closing
// byte (and is then false). first is true until the first member.
func (t *tokenizer) more(first *bool, closing byte) bool {
	if t.err != nil {
		return false
	}
	switch c := t.peek(); {
	case c == closing:
		t.pos++
		t.depth--
		return false
	case *first:
	case c == ',':
		t.pos++
	case closing == '}':
		t.syntax("expected ',' or '}'")
		return false
	default:
		t.syntax("expected ',' or ']'")
		return false
	}
	*first = false
	return true
}

// key reads a member's key and its colon. The bytes are valid until the
// next string is read.
func (t *tokenizer) key() []byte {
	if t.peek() != '"' {
		t.syntax("expected a string key")
		return nil
	}
	k := t.stringBytes()
	if t.err != nil {
		return nil
	}
	if t.peek() != ':' {
		t.syntax("expected ':' after a key")
		return nil
	}
	t.pos++
	return k
}

// stringBytes reads the string at pos (its quote checked by the caller).
// Without escapes and in valid UTF-8 it is the input's own bytes;
// otherwise it is unescaped into t.buf as encoding/json unescapes it.
// Either way the bytes are valid until the next string.
func (t *tokenizer) stringBytes() []byte {
	start := t.pos + 1
	// Keys and names are short and plain: read them a byte at a time.
	for i := start; i < len(t.data) && i < start+24; i++ {
		c := t.data[i]
		if c == '"' {
			t.pos = i + 1
			return t.data[start:i]
		}
		if !plainByte[c] {
			break
		}
	}
	q := bytes.IndexByte(t.data[start:], '"')
	if q < 0 {
		return t.unquote(start)
	}
	s := t.data[start : start+q]
	if bytes.IndexByte(s, '\\') >= 0 {
		return t.unquote(start)
	}
	control, high := scanString(s)
	if control || (high && !utf8.Valid(s)) {
		return t.unquote(start)
	}
	t.pos = start + q + 1
	return s
}

// plainByte: an ASCII byte that a string holds as it is.
var plainByte = func() (t [256]bool) {
	for c := 0x20; c < utf8.RuneSelf; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

// scanString says whether s holds a control character (which a JSON
// string may not hold raw) and whether it holds a byte outside ASCII,
// eight bytes at a time.
func scanString(s []byte) (control, high bool) {
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	var acc, hi uint64
	i := 0
	for ; i+8 <= len(s); i += 8 {
		w := binary.LittleEndian.Uint64(s[i:])
		acc |= (w - 0x20*ones) &^ w & highs // a byte below 0x20
		hi |= w & highs
	}
	for ; i < len(s); i++ {
		c := s[i]
		if c < 0x20 {
			acc = 1
		}
		hi |= uint64(c & 0x80)
	}
	return acc != 0, hi != 0
}

// unquote reads a string that needs unescaping or holds invalid UTF-8,
// from start (after its opening quote), as encoding/json's unquote does:
// \uXXXX pairs of surrogates make one rune, a lone surrogate or an
// invalid byte becomes U+FFFD. A run of plain ASCII is copied at once.
func (t *tokenizer) unquote(start int) []byte {
	b := t.buf[:0]
	i := start
	for {
		run := i
		for i < len(t.data) && plainByte[t.data[i]] {
			i++
		}
		b = append(b, t.data[run:i]...)
		if i >= len(t.data) {
			t.pos = i
			t.syntax("unterminated string")
			return nil
		}
		switch c := t.data[i]; {
		case c == '"':
			t.pos = i + 1
			t.buf = b
			return b
		case c == '\\':
			var ok bool
			if b, i, ok = t.escape(b, i); !ok {
				return nil
			}
		case c < 0x20:
			t.pos = i
			t.syntax("control character in a string")
			return nil
		default:
			rr, size := utf8.DecodeRune(t.data[i:])
			if rr == utf8.RuneError && size == 1 {
				b = utf8.AppendRune(b, utf8.RuneError)
			} else {
				b = append(b, t.data[i:i+size]...)
			}
			i += size
		}
	}
}

// escape appends what the escape at i (its backslash) stands for to b and
// says where the string goes on; false, the error kept, for a malformed one.
func (t *tokenizer) escape(b []byte, i int) ([]byte, int, bool) {
	if i+1 >= len(t.data) {
		t.pos = i + 1
		t.syntax("unterminated escape")
		return b, i, false
	}
	switch e := t.data[i+1]; e {
	case '"', '\\', '/':
		return append(b, e), i + 2, true
	case 'b':
		return append(b, '\b'), i + 2, true
	case 'f':
		return append(b, '\f'), i + 2, true
	case 'n':
		return append(b, '\n'), i + 2, true
	case 'r':
		return append(b, '\r'), i + 2, true
	case 't':
		return append(b, '\t'), i + 2, true
	case 'u':
		rr := hex4(t.data, i+2)
		if rr < 0 {
			t.pos = i + 2
			t.syntax("expected four hex digits after \\u")
			return b, i, false
		}
		i += 6
		if utf16.IsSurrogate(rr) {
			if next := escapedRune(t.data, i); next >= 0 {
				if dec := utf16.DecodeRune(rr, next); dec != utf8.RuneError {
					return utf8.AppendRune(b, dec), i + 6, true
				}
			}
			rr = utf8.RuneError
		}
		return utf8.AppendRune(b, rr), i, true
	}
	t.pos = i + 1
	t.syntax("invalid escape")
	return b, i, false
}

// escapedRune is the rune of a \uXXXX at i, or -1 if there is none. A
// malformed one is left for unquote to refuse when it reaches it.
func escapedRune(data []byte, i int) rune {
	if i+1 >= len(data) || data[i] != '\\' || data[i+1] != 'u' {
		return -1
	}
	return hex4(data, i+2)
}

func hex4(data []byte, i int) rune {
	if i+4 > len(data) {
		return -1
	}
	var v rune
	for _, c := range data[i : i+4] {
		switch {
		case '0' <= c && c <= '9':
			c -= '0'
		case 'a' <= c && c <= 'f':
			c = c - 'a' + 10
		case 'A' <= c && c <= 'F':
			c = c - 'A' + 10
		default:
			return -1
		}
		v = v<<4 | rune(c)
	}
	return v
}

// number reads a number's text, checked against JSON's grammar.
func (t *tokenizer) number() []byte {
	if t.err != nil {
		return nil
	}
	t.space()
	start, i, d := t.pos, t.pos, t.data
	if i < len(d) && d[i] == '-' {
		i++
	}
	switch {
	case i < len(d) && d[i] == '0':
		i++
	case i < len(d) && '1' <= d[i] && d[i] <= '9':
		for i++; i < len(d) && '0' <= d[i] && d[i] <= '9'; i++ {
		}
	default:
		t.pos = i
		t.syntax("expected a digit")
		return nil
	}
	if i < len(d) && d[i] == '.' {
		i++
		if i >= len(d) || d[i] < '0' || d[i] > '9' {
			t.pos = i
			t.syntax("expected a digit after '.'")
			return nil
		}
		for ; i < len(d) && '0' <= d[i] && d[i] <= '9'; i++ {
		}
	}
	if i < len(d) && (d[i] == 'e' || d[i] == 'E') {
		i++
		if i < len(d) && (d[i] == '+' || d[i] == '-') {
			i++
		}
		if i >= len(d) || d[i] < '0' || d[i] > '9' {
			t.pos = i
			t.syntax("expected a digit in an exponent")
			return nil
		}
		for ; i < len(d) && '0' <= d[i] && d[i] <= '9'; i++ {
		}
	}
	t.pos = i
	return d[start:i]
}

// skip reads any value (of a key the client does not know), checking it
// as encoding/json checks it.
func (t *tokenizer) skip() {
	if t.err != nil {
		return
	}
	switch c := t.peek(); {
	case c == '{':
		t.open('{')
		for first := true; t.more(&first, '}'); {
			t.key()
			t.skip()
		}
	case c == '[':
		t.open('[')
		for first := true; t.more(&first, ']'); {
			t.skip()
		}
	case c == '"':
		t.stringBytes()
	case c == 't':
		t.literal("true")
	case c == 'f':
		t.literal("false")
	case c == 'n':
		t.literal("null")
	case c == '-' || ('0' <= c && c <= '9'):
		t.number()
	default:
		t.syntax("expected a value")
	}
}
