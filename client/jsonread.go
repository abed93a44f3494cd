package client

import (
	"encoding/base64"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"unicode/utf8"

	"github.com/offlinebox/offlinebox/jsontok"
)

// A reader for the client's large answers, without reflection: the
// values of the answers' types (strings, interned names, numbers in
// range, base64 bodies, arrays, objects of known keys) read through the
// tokenizer of package jsontok, by the walkers of wire_decode.go, field by
// field. It accepts what encoding/json accepts (the whole input is checked,
// nesting is bounded as encoding/json bounds it; numbers are refused out
// of range, with a fraction or exponent, or signed for an unsigned field,
// as strconv refuses them for encoding/json) and gives the same values
// for the answers' types. Its errors say what is wrong in their own words:
// only whether a decode fails is encoding/json's. A shape it does not
// decode the way encoding/json does makes it stop with errReflectOnly,
// and the answer is then decoded by encoding/json after all (see
// SyncResponse.decodeWire).
//
// Keys are matched exactly, as the server writes them. encoding/json also
// accepts a key in another case ("SEQ" for "seq"); such a key, which the
// server never sends, is one of the shapes left to encoding/json.

// errReflectOnly: the answer has a shape that only encoding/json decodes
// the way the client has always decoded it (a repeated key, whose values
// encoding/json merges; a key matching a field only in another case; a
// body given as an array of numbers). The server sends none of them.
var errReflectOnly = errors.New("answer shape left to encoding/json")

type jsonReader struct {
	jsontok.Tokenizer
	// names interns the strings an answer repeats (senders, members,
	// conversation ids) for the length of one decode.
	names [256]string
	// msgs is where an array of messages is read before it is copied out.
	msgs []Message
	// texts is where this decode copies text bodies to: one allocation
	// for many messages' bodies instead of one each (a sync answer holds
	// hundreds). It belongs to the decoded answer, never to the next.
	texts []byte
}

// textsChunk is the size of a texts block; a longer body gets its own.
const textsChunk = 32 << 10

// keepText copies s out of the input into texts; the slice's capacity
// ends with it, so that appending to one body never writes over the next.
func (r *jsonReader) keepText(s []byte) []byte {
	if len(s) == 0 || len(s) > textsChunk/4 {
		return append(make([]byte, 0, len(s)), s...)
	}
	if cap(r.texts)-len(r.texts) < len(s) {
		// The rest of the input bounds the bodies still to come: a frame
		// of one small message gets a block of its size, not a chunk.
		r.texts = make([]byte, 0, min(textsChunk, len(s)+r.Remaining()))
	}
	at := len(r.texts)
	r.texts = append(r.texts, s...)
	return r.texts[at:len(r.texts):len(r.texts)]
}

// readers keeps readers between decodes, with what they grew: the
// buffer of messages, the table of names (names interned by one answer
// serve the next), the buffer of unescaped strings.
var readers = sync.Pool{New: func() any { return new(jsonReader) }}

// newJSONReader is a reader of data; release gives it back.
func newJSONReader(data []byte) *jsonReader {
	r := readers.Get().(*jsonReader)
	r.Reset(data)
	return r
}

// maxKeptBuffer bounds the unescaped-string buffer a released reader
// keeps, and maxKeptMessages its buffer of messages.
const (
	maxKeptBuffer   = 64 << 10
	maxKeptMessages = 1024
)

// release gives the reader back once the decode is done; nothing it
// keeps refers to the input.
func (r *jsonReader) release() {
	r.texts = nil
	r.Release(maxKeptBuffer)
	if cap(r.msgs) > maxKeptMessages {
		r.msgs = nil
	}
	readers.Put(r)
}

// str reads a string into dst; a null leaves dst as it is.
func (r *jsonReader) str(dst *string) {
	if s, ok := r.strBytes(); ok {
		*dst = string(s)
	}
}

// strBytes reads a string's bytes (valid until the next string); false
// for a null and on an error.
func (r *jsonReader) strBytes() ([]byte, bool) {
	if r.Err() != nil {
		return nil, false
	}
	switch r.Peek() {
	case '"':
		s := r.StringBytes()
		return s, r.Err() == nil
	case 'n':
		r.Literal("null")
		return nil, false
	}
	r.Mismatch("a string")
	return nil, false
}

// name reads a string the answer repeats (a sender, a member, a
// conversation id): a value met again, while it holds its slot of a
// small table, is the same string and costs no allocation. The table is
// direct-mapped so that it never grows: names that share a slot take turns.
func (r *jsonReader) name(dst *string) {
	s, ok := r.strBytes()
	if !ok {
		return
	}
	if len(s) > maxInternedLen {
		*dst = string(s)
		return
	}
	h := uint32(2166136261) // FNV-1a: names are short
	for _, c := range s {
		h = (h ^ uint32(c)) * 16777619
	}
	h ^= h >> 15
	slot := &r.names[h%uint32(len(r.names))]
	if *slot != string(s) {
		*slot = string(s)
	}
	*dst = *slot
}

// maxInternedLen: a longer string is not a name.
const maxInternedLen = 64

// word reads one of the few values a field takes (a kind, a content or
// conversation type): the known ones are not allocated at all.
func (r *jsonReader) word(dst *string) {
	s, ok := r.strBytes()
	if !ok {
		return
	}
	switch string(s) {
	case "message":
		*dst = "message"
	case "member_join":
		*dst = "member_join"
	case "member_leave":
		*dst = "member_leave"
	case "group":
		*dst = "group"
	case "direct":
		*dst = "direct"
	case "unspecified":
		*dst = "unspecified"
	case "text/plain":
		*dst = "text/plain"
	case "text/markdown":
		*dst = "text/markdown"
	case "application/octet-stream":
		*dst = "application/octet-stream"
	case "application/json":
		*dst = "application/json"
	case "image/png":
		*dst = "image/png"
	case "image/jpeg":
		*dst = "image/jpeg"
	case "":
		*dst = ""
	default:
		*dst = string(s)
	}
}

// strings reads an array of strings (nil for a null, empty for []), each
// interned as a name. It is not a readArray: messages carry these arrays,
// and through readArray's element call they cost an allocation more each.
func (r *jsonReader) strings(dst *[]string) {
	if !r.Open('[') {
		if r.Err() == nil {
			*dst = nil
		}
		return
	}
	out := []string{}
	for first := true; r.More(&first, ']'); {
		var s string
		r.name(&s)
		out = append(out, s)
	}
	*dst = out
}

// readArray reads an array (nil for a null, empty for []) with elem
// reading each element in place.
func readArray[T any](r *jsonReader, dst *[]T, elem func(*jsonReader, *T)) {
	if !r.Open('[') {
		if r.Err() == nil {
			*dst = nil
		}
		return
	}
	out := []T{}
	for first := true; r.More(&first, ']'); {
		var zero T
		out = append(out, zero)
		elem(r, &out[len(out)-1])
	}
	*dst = out
}

// base64Bytes reads a string holding base64 into dst (what encoding/json
// does for a []byte); a null sets dst to nil.
func (r *jsonReader) base64Bytes(dst *[]byte) {
	if r.Err() != nil {
		return
	}
	switch r.Peek() {
	case '"':
	case 'n':
		r.Literal("null")
		*dst = nil
		return
	case '[':
		r.Fail(errReflectOnly) // a []byte as an array of numbers
		return
	default:
		r.Mismatch("a base64 string")
		return
	}
	at := r.Pos()
	s := r.StringBytes()
	if r.Err() != nil {
		return
	}
	b := make([]byte, base64.StdEncoding.DecodedLen(len(s)))
	n, err := base64.StdEncoding.Decode(b, s)
	if err != nil {
		r.Fail(fmt.Errorf("at offset %d: body is not base64: %w", at, err))
		return
	}
	*dst = b[:n]
}

// numberStart: the next value is a number; anything else but a null is
// the wrong type.
func (r *jsonReader) numberStart() bool {
	if r.Err() != nil {
		return false
	}
	switch c := r.Peek(); {
	case c == '-' || ('0' <= c && c <= '9'):
		return true
	case c == 'n':
		r.Literal("null")
		return false
	}
	r.Mismatch("a number")
	return false
}

// uint reads an unsigned integer into dst as encoding/json does
// (strconv.ParseUint of the number's text: no sign, fraction or
// exponent, and in range); a null leaves dst as it is.
func (r *jsonReader) uint(dst *uint64) {
	if !r.numberStart() {
		return
	}
	at := r.Pos()
	s := r.Number()
	if r.Err() != nil {
		return
	}
	if len(s) <= 19 && s[0] != '-' {
		var v uint64
		digits := true
		for _, c := range s {
			if c < '0' || c > '9' {
				digits = false
				break
			}
			v = v*10 + uint64(c-'0')
		}
		if digits {
			*dst = v
			return
		}
	}
	v, err := strconv.ParseUint(string(s), 10, 64)
	if err != nil {
		r.Fail(fmt.Errorf("at offset %d: %s is not an unsigned 64-bit integer", at, s))
		return
	}
	*dst = v
}

// uintPtr reads an unsigned integer into a new value that dst points to
// (uint's rules); a null sets dst to nil, as encoding/json does.
func (r *jsonReader) uintPtr(dst **uint64) {
	if r.Null() {
		*dst = nil
		return
	}
	var v uint64
	r.uint(&v)
	if r.Err() == nil {
		*dst = &v
	}
}

// intBits reads a signed integer of bits bits into dst as encoding/json
// does (strconv.ParseInt); a null leaves dst as it is.
func (r *jsonReader) intBits(dst *int64, bits int) {
	if !r.numberStart() {
		return
	}
	at := r.Pos()
	s := r.Number()
	if r.Err() != nil {
		return
	}
	if len(s) <= 18 && bits == 64 {
		var v int64
		digits := true
		neg := s[0] == '-'
		ds := s
		if neg {
			ds = s[1:]
		}
		for _, c := range ds {
			if c < '0' || c > '9' {
				digits = false
				break
			}
			v = v*10 + int64(c-'0')
		}
		if digits {
			if neg {
				v = -v
			}
			*dst = v
			return
		}
	}
	v, err := strconv.ParseInt(string(s), 10, bits)
	if err != nil {
		r.Fail(fmt.Errorf("at offset %d: %s is not a signed %d-bit integer", at, s, bits))
		return
	}
	*dst = v
}

func (r *jsonReader) int64(dst *int64) { r.intBits(dst, 64) }

func (r *jsonReader) int(dst *int) {
	v := int64(*dst)
	r.intBits(&v, strconv.IntSize)
	*dst = int(v)
}

// bool reads true or false into dst; a null leaves dst as it is.
func (r *jsonReader) bool(dst *bool) {
	if r.Err() != nil {
		return
	}
	switch r.Peek() {
	case 't':
		r.Literal("true")
		if r.Err() == nil {
			*dst = true
		}
	case 'f':
		r.Literal("false")
		if r.Err() == nil {
			*dst = false
		}
	case 'n':
		r.Literal("null")
	default:
		r.Mismatch("a boolean")
	}
}

// unknown handles a key no field has: its value is skipped, unless the
// key names a field in another case or in other than ASCII, which
// encoding/json would match (see errReflectOnly).
func (r *jsonReader) unknown(key []byte, fields ...string) {
	for _, c := range key {
		if c >= utf8.RuneSelf {
			r.Fail(errReflectOnly)
			return
		}
	}
	for _, f := range fields {
		if len(f) == len(key) && asciiEqualFold(f, key) {
			r.Fail(errReflectOnly)
			return
		}
	}
	r.Skip()
}

func asciiEqualFold(s string, b []byte) bool {
	for i := range len(s) {
		x, y := s[i], b[i]
		if 'A' <= x && x <= 'Z' {
			x += 'a' - 'A'
		}
		if 'A' <= y && y <= 'Z' {
			y += 'a' - 'A'
		}
		if x != y {
			return false
		}
	}
	return true
}

// object reads an object's members. field reads the value of a key it
// knows and says which field it was (a bit of its own, 0 to 31), or is -1
// for a key it does not know and leaves its value unread: unknown skips
// it, keys being the fields' names. A key read twice leaves the answer to
// encoding/json, which merges repeated values. object is true once the
// object is opened (false for a null, consumed, and on an error).
func (r *jsonReader) object(keys []string, field func(key []byte) int) bool {
	if !r.Open('{') {
		return false
	}
	var seen uint32
	for first := true; r.More(&first, '}'); {
		k := r.Key()
		if r.Err() != nil {
			break
		}
		bit := field(k)
		if bit < 0 {
			r.unknown(k, keys...)
			continue
		}
		if seen&(1<<bit) != 0 {
			// The answer goes to encoding/json whatever reading the value
			// again did: as if the key had been refused before its value.
			r.Override(errReflectOnly)
		}
		seen |= 1 << bit
	}
	return true
}
