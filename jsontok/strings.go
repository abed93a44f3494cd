package jsontok

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"unicode/utf16"
	"unicode/utf8"
)

// StringBytes reads the string at pos (its quote checked by the caller).
// Without escapes and in valid UTF-8 it is the input's own bytes;
// otherwise it is unescaped into t.buf as encoding/json unescapes it.
// Either way the bytes are valid until the next string. In a strict walk
// what encoding/json would rewrite is an *InvalidTextError instead.
func (t *Tokenizer) StringBytes() []byte {
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

// InvalidTextError is what a strict walk (ResetStrict) refuses of a
// string that encoding/json would quietly rewrite to U+FFFD: invalid
// UTF-8, raw or as a lone surrogate escape.
type InvalidTextError struct {
	// What says what and where: "byte 0xff at offset 12", "lone
	// surrogate \ud800 at offset 3".
	What string
}

func (e *InvalidTextError) Error() string { return "invalid text in a JSON string: " + e.What }

// Buffered says whether s, read by StringBytes, was
// unescaped into the Tokenizer's buffer (which the next string
// overwrites) rather than being a piece of the input.
func (t *Tokenizer) Buffered(s []byte) bool {
	return len(s) > 0 && len(t.buf) > 0 && &s[0] == &t.buf[0]
}

// PlainString reads a string of printable ASCII without escapes: the
// input's own bytes. Any other value or string is false, its error kept,
// for a fast path that leaves whatever is not plain to a slower reader.
func (t *Tokenizer) PlainString() ([]byte, bool) {
	if t.err != nil {
		return nil, false
	}
	if t.Peek() != '"' {
		t.Mismatch("a plain string")
		return nil, false
	}
	start := t.pos + 1
	for i := start; i < len(t.data); i++ {
		switch c := t.data[i]; {
		case c == '"':
			t.pos = i + 1
			return t.data[start:i], true
		case !plainByte[c] || c == 0x7f:
			t.pos = i
			t.Syntax("expected printable ASCII without escapes")
			return nil, false
		}
	}
	t.pos = len(t.data)
	t.Syntax("unterminated string")
	return nil, false
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
func (t *Tokenizer) unquote(start int) []byte {
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
			t.Syntax("unterminated string")
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
			t.Syntax("control character in a string")
			return nil
		default:
			rr, size := utf8.DecodeRune(t.data[i:])
			if rr == utf8.RuneError && size == 1 {
				if t.strict {
					t.Fail(&InvalidTextError{What: fmt.Sprintf("byte 0x%02x at offset %d", c, i)})
					return nil
				}
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
func (t *Tokenizer) escape(b []byte, i int) ([]byte, int, bool) {
	if i+1 >= len(t.data) {
		t.escapeSyntax(i, i+1, "unterminated escape")
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
			t.escapeSyntax(i, i+2, "expected four hex digits after \\u")
			return b, i, false
		}
		i += 6
		if utf16.IsSurrogate(rr) {
			if next := escapedRune(t.data, i); next >= 0 {
				if dec := utf16.DecodeRune(rr, next); dec != utf8.RuneError {
					return utf8.AppendRune(b, dec), i + 6, true
				}
			}
			if t.strict {
				t.Fail(&InvalidTextError{What: fmt.Sprintf("lone surrogate %s at offset %d", t.data[i-6:i], i-6)})
				return b, i, false
			}
			rr = utf8.RuneError
		}
		return utf8.AppendRune(b, rr), i, true
	}
	t.escapeSyntax(i, i+1, "invalid escape")
	return b, i, false
}

// escapeSyntax keeps the error of a malformed escape, found at at; a
// strict read places it at the escape's backslash, i.
func (t *Tokenizer) escapeSyntax(i, at int, what string) {
	t.pos = at
	if t.strict {
		t.pos = i
	}
	t.Syntax(what)
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
