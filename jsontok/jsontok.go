package jsontok

import (
	"fmt"
	"math"
)

// maxNestingDepth is encoding/json's bound on nesting.
const maxNestingDepth = 10000

// Tokenizer is a cursor over one JSON text; the zero value is ready for
// Reset.
type Tokenizer struct {
	data  []byte
	pos   int
	depth int
	err   error
	// buf holds an unescaped string or key until the next one is read.
	buf []byte
	// strict: a walk begun by ResetStrict.
	strict bool
}

// Reset starts a walk of data, keeping buf's memory.
func (t *Tokenizer) Reset(data []byte) {
	t.data, t.pos, t.depth, t.err, t.strict = data, 0, 0, nil, false
}

// ResetStrict starts a strict walk of data: a string that encoding/json
// would quietly rewrite (invalid UTF-8, a lone surrogate) is an
// *InvalidTextError, for requests whose ids must not collide, and a
// malformed escape's error is placed at its backslash.
func (t *Tokenizer) ResetStrict(data []byte) {
	t.Reset(data)
	t.strict = true
}

// Fail keeps the first error; every step after it does nothing.
func (t *Tokenizer) Fail(err error) {
	if t.err == nil {
		t.err = err
	}
}

// Override puts err in place of whatever error is kept, for a reader
// that decides after a step that the walk failed for another reason.
func (t *Tokenizer) Override(err error) { t.err = err }

// Err is the first error of the walk, nil while there is none.
func (t *Tokenizer) Err() error { return t.err }

// Pos is the offset of the next byte to read; after an error, where the
// error was found.
func (t *Tokenizer) Pos() int { return t.pos }

// Remaining is how many bytes are left to read.
func (t *Tokenizer) Remaining() int { return len(t.data) - t.pos }

// Release forgets the input and the error, so that a kept Tokenizer
// holds on to no one's bytes; it keeps the unescaping buffer unless that
// grew beyond maxBuf.
func (t *Tokenizer) Release(maxBuf int) {
	t.data, t.err = nil, nil
	if cap(t.buf) > maxBuf {
		t.buf = nil
	}
}

// Syntax keeps an error saying what was expected at Pos.
func (t *Tokenizer) Syntax(what string) {
	if t.pos >= len(t.data) {
		t.Fail(fmt.Errorf("invalid JSON: unexpected end of input (%s)", what))
		return
	}
	t.Fail(fmt.Errorf("invalid JSON at offset %d: %s, found %q", t.pos, what, t.data[t.pos]))
}

// Mismatch keeps an error for a value of the wrong type. Whether the
// rest of the input is well-formed does not matter: encoding/json fails
// on it too.
func (t *Tokenizer) Mismatch(want string) {
	if t.pos >= len(t.data) {
		t.Syntax("expected " + want)
		return
	}
	t.Fail(fmt.Errorf("at offset %d: %q does not start %s", t.pos, t.data[t.pos], want))
}

// Space skips white space.
func (t *Tokenizer) Space() {
	for t.pos < len(t.data) {
		switch t.data[t.pos] {
		case ' ', '\t', '\n', '\r':
			t.pos++
		default:
			return
		}
	}
}

// Peek is the first byte of the next value (0 at the end).
func (t *Tokenizer) Peek() byte {
	t.Space()
	if t.pos >= len(t.data) {
		return 0
	}
	return t.data[t.pos]
}

// Consume consumes c, after white space, if it is next; otherwise it
// reads nothing and keeps no error (the caller decides what else may
// come).
func (t *Tokenizer) Consume(c byte) bool {
	if t.err != nil || t.Peek() != c || t.pos >= len(t.data) {
		return false
	}
	t.pos++
	return true
}

// End checks that nothing but space follows the top-level value.
func (t *Tokenizer) End() error {
	if t.err != nil {
		return t.err
	}
	t.Space()
	if t.pos != len(t.data) {
		t.Syntax("expected the end after the top-level value")
	}
	return t.err
}

// Literal consumes word (true, false, null) at pos.
func (t *Tokenizer) Literal(word string) {
	if len(t.data)-t.pos < len(word) || string(t.data[t.pos:t.pos+len(word)]) != word {
		t.Syntax("expected " + word)
		return
	}
	t.pos += len(word)
}

// Null consumes a null if one is next; false for any other value (left
// unread) and on an error.
func (t *Tokenizer) Null() bool {
	if t.err != nil || t.Peek() != 'n' {
		return false
	}
	t.Literal("null")
	return t.err == nil
}

// Open consumes the opening of an object or array ('{' or '['); it is
// false for a null (consumed) and on an error.
func (t *Tokenizer) Open(c byte) bool {
	if t.err != nil {
		return false
	}
	switch t.Peek() {
	case c:
		t.pos++
		t.depth++
		if t.depth > maxNestingDepth {
			t.Fail(fmt.Errorf("invalid JSON at offset %d: nested deeper than %d", t.pos, maxNestingDepth))
			return false
		}
		return true
	case 'n':
		t.Literal("null")
		return false
	}
	if c == '{' {
		t.Mismatch("an object")
	} else {
		t.Mismatch("an array")
	}
	return false
}

// More walks the members of an object or the elements of an array opened
// by open: it consumes the separator before the next one, or the closing
// byte (and is then false). first is true until the first member.
func (t *Tokenizer) More(first *bool, closing byte) bool {
	if t.err != nil {
		return false
	}
	switch c := t.Peek(); {
	case c == closing:
		t.pos++
		t.depth--
		return false
	case *first:
	case c == ',':
		t.pos++
	case closing == '}':
		t.Syntax("expected ',' or '}'")
		return false
	default:
		t.Syntax("expected ',' or ']'")
		return false
	}
	*first = false
	return true
}

// Key reads a member's key and its colon. The bytes are valid until the
// next string is read.
func (t *Tokenizer) Key() []byte {
	if t.Peek() != '"' {
		t.Syntax("expected a string key")
		return nil
	}
	k := t.StringBytes()
	if t.err != nil {
		return nil
	}
	if t.Peek() != ':' {
		t.Syntax("expected ':' after a key")
		return nil
	}
	t.pos++
	return k
}

// Number reads a number's text, checked against JSON's grammar.
func (t *Tokenizer) Number() []byte {
	if t.err != nil {
		return nil
	}
	t.Space()
	start, i, d := t.pos, t.pos, t.data
	if i < len(d) && d[i] == '-' {
		i++
	}
	switch {
	case i < len(d) && d[i] == '0':
		i++
	case i < len(d) && '1' <= d[i] && d[i] <= '9':
		i, _ = digits(d, i+1)
	default:
		t.pos = i
		t.Syntax("expected a digit")
		return nil
	}
	var ok bool
	if i < len(d) && d[i] == '.' {
		if i, ok = digits(d, i+1); !ok {
			t.pos = i
			t.Syntax("expected a digit after '.'")
			return nil
		}
	}
	if i < len(d) && (d[i] == 'e' || d[i] == 'E') {
		i++
		if i < len(d) && (d[i] == '+' || d[i] == '-') {
			i++
		}
		if i, ok = digits(d, i); !ok {
			t.pos = i
			t.Syntax("expected a digit in an exponent")
			return nil
		}
	}
	t.pos = i
	return d[start:i]
}

// digits is where the run of digits of d from i ends; false when there
// is none.
func digits(d []byte, i int) (int, bool) {
	j := i
	for j < len(d) && '0' <= d[j] && d[j] <= '9' {
		j++
	}
	return j, j > i
}

// Skip reads any value (of a key the reader does not know), checking it
// as encoding/json checks it.
func (t *Tokenizer) Skip() {
	if t.err != nil {
		return
	}
	switch c := t.Peek(); {
	case c == '{':
		t.Open('{')
		for first := true; t.More(&first, '}'); {
			t.Key()
			t.Skip()
		}
	case c == '[':
		t.Open('[')
		for first := true; t.More(&first, ']'); {
			t.Skip()
		}
	case c == '"':
		t.StringBytes()
	case c == 't':
		t.Literal("true")
	case c == 'f':
		t.Literal("false")
	case c == 'n':
		t.Literal("null")
	case c == '-' || ('0' <= c && c <= '9'):
		t.Number()
	default:
		t.Syntax("expected a value")
	}
}

// Uint is the value of a number's text (as Number reads it) when it is a
// non-negative integer, without fraction or exponent, that fits in a
// uint64: what strconv.ParseUint, and so encoding/json for a uint64,
// accepts of JSON's numbers.
func Uint(text []byte) (uint64, bool) {
	if len(text) == 0 || len(text) > 20 {
		return 0, false
	}
	var v uint64
	for i, c := range text {
		if c < '0' || c > '9' {
			return 0, false
		}
		d := uint64(c - '0')
		// Nineteen digits always fit; only the twentieth may overflow.
		if i == 19 && v > (math.MaxUint64-d)/10 {
			return 0, false
		}
		v = v*10 + d
	}
	return v, true
}
