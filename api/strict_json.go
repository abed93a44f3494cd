package api

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// maxJSONDepth bounds the nesting of a request body; no request needs more
// than four levels.
const maxJSONDepth = 32

// checkJSON walks a request body before it is decoded into a value of type
// t and refuses, naming the field, what encoding/json would quietly let
// through: invalid UTF-8, raw or as a lone surrogate escape (json rewrites
// both to U+FFFD, so distinct ids would collide); a key given twice in one
// object (json keeps the last); a key that is not exactly one of the
// struct's field names (json matches them ignoring case). Everything else
// (types, ranges) is left to the decoder and the handlers.
func checkJSON(data []byte, t reflect.Type, prefix string) *apiError {
	sc := &jsonScanner{data: data, prefix: prefix}
	sc.space()
	if err := sc.value(t, loc{parent: prefix, index: -1}, 0); err != nil {
		return err
	}
	if sc.space(); sc.pos < len(sc.data) {
		return badRequest(joinField(prefix, "body"), "trailing data after the JSON value")
	}
	return nil
}

type jsonScanner struct {
	data   []byte
	pos    int
	prefix string
}

func (sc *jsonScanner) malformed() *apiError {
	return badRequest(joinField(sc.prefix, "body"), "malformed JSON at offset %d", sc.pos)
}

func (sc *jsonScanner) space() {
	for sc.pos < len(sc.data) {
		switch sc.data[sc.pos] {
		case ' ', '\t', '\n', '\r':
			sc.pos++
		default:
			return
		}
	}
}

// loc is where a value is, spelled out only when an error or a nested
// value needs it: most values are scalars that never do.
type loc struct {
	parent string
	key    []byte // a member of an object, or
	index  int    // an item of an array (key nil), or -1: the parent itself
}

func (l loc) String() string {
	switch {
	case l.key != nil:
		return joinField(l.parent, string(l.key))
	case l.index >= 0:
		return l.parent + "[" + strconv.Itoa(l.index) + "]"
	}
	return l.parent
}

// value scans one value at l; t is the Go type it will be decoded into
// (nil: any).
func (sc *jsonScanner) value(t reflect.Type, l loc, depth int) *apiError {
	if sc.pos >= len(sc.data) {
		return badRequest(joinField(sc.prefix, "body"), "incomplete JSON")
	}
	switch c := sc.data[sc.pos]; {
	case c == '{', c == '[':
		path := l.String()
		if depth >= maxJSONDepth {
			return badRequest(fieldOrBody(path, sc.prefix), "nests deeper than %d levels", maxJSONDepth)
		}
		if c == '{' {
			return sc.object(t, path, depth+1)
		}
		return sc.array(t, path, depth+1)
	case c == '"':
		_, err := sc.str(l, false)
		return err
	case c == '-' || (c >= '0' && c <= '9'):
		return sc.number()
	default:
		for _, lit := range []string{"true", "false", "null"} {
			if bytes.HasPrefix(sc.data[sc.pos:], []byte(lit)) {
				sc.pos += len(lit)
				return nil
			}
		}
		return sc.malformed()
	}
}

func (sc *jsonScanner) object(t reflect.Type, path string, depth int) *apiError {
	sc.pos++ // {
	shape := shapeOf(t)
	var seen keySet
	sc.space()
	if sc.pos < len(sc.data) && sc.data[sc.pos] == '}' {
		sc.pos++
		return nil
	}
	for {
		sc.space()
		if sc.pos >= len(sc.data) || sc.data[sc.pos] != '"' {
			return sc.malformed()
		}
		key, err := sc.str(loc{parent: path, index: -1}, true)
		if err != nil {
			return err
		}
		at := loc{parent: path, key: key}
		if !seen.add(key) {
			return badRequest(at.String(), "is given more than once")
		}
		var elem reflect.Type
		switch shape.kind {
		case reflect.Struct:
			var ok bool
			if elem, ok = shape.field(key); !ok {
				return shape.unknown(at.String(), string(key))
			}
		case reflect.Map:
			elem = shape.elem
		}
		sc.space()
		if sc.pos >= len(sc.data) || sc.data[sc.pos] != ':' {
			return sc.malformed()
		}
		sc.pos++
		sc.space()
		if err := sc.value(elem, at, depth); err != nil {
			return err
		}
		if done, err := sc.separator('}'); done || err != nil {
			return err
		}
	}
}

func (sc *jsonScanner) array(t reflect.Type, path string, depth int) *apiError {
	sc.pos++ // [
	shape := shapeOf(t)
	var elem reflect.Type
	if shape.kind == reflect.Slice {
		elem = shape.elem
	}
	sc.space()
	if sc.pos < len(sc.data) && sc.data[sc.pos] == ']' {
		sc.pos++
		return nil
	}
	for i := 0; ; i++ {
		sc.space()
		if err := sc.value(elem, loc{parent: path, index: i}, depth); err != nil {
			return err
		}
		if done, err := sc.separator(']'); done || err != nil {
			return err
		}
	}
}

// separator consumes what follows a member of an object or array: a comma
// (more follow) or its closer (done).
func (sc *jsonScanner) separator(closer byte) (done bool, err *apiError) {
	sc.space()
	if sc.pos >= len(sc.data) {
		return false, sc.malformed()
	}
	switch sc.data[sc.pos] {
	case ',':
		sc.pos++
		return false, nil
	case closer:
		sc.pos++
		return true, nil
	}
	return false, sc.malformed()
}

// str scans a string at sc.pos (its opening quote); it returns the decoded
// bytes when want (keys): a piece of the body itself when the string has
// no escapes. Invalid UTF-8 names the value's field, or for a key the
// object holding it.
func (sc *jsonScanner) str(l loc, want bool) ([]byte, *apiError) {
	sc.pos++ // "
	// Most strings are plain ASCII without escapes: taken as they are.
	start := sc.pos
	for sc.pos < len(sc.data) {
		c := sc.data[sc.pos]
		if c == '"' {
			sc.pos++
			return sc.data[start : sc.pos-1 : sc.pos-1], nil
		}
		if c < 0x20 || c == '\\' || c >= utf8.RuneSelf {
			break
		}
		sc.pos++
	}
	var b []byte
	if want {
		b = append(b, sc.data[start:sc.pos]...)
	}
	bad := func(what string) *apiError {
		if want {
			return badRequest(fieldOrBody(l.String(), sc.prefix), "holds a key that is not valid UTF-8 (%s)", what)
		}
		return badRequest(fieldOrBody(l.String(), sc.prefix), "is not valid UTF-8 (%s)", what)
	}
	for sc.pos < len(sc.data) {
		c := sc.data[sc.pos]
		switch {
		case c == '"':
			sc.pos++
			if b == nil {
				b = []byte{}
			}
			return b, nil
		case c < 0x20:
			return nil, sc.malformed()
		case c == '\\':
			r, err := sc.escape(bad)
			if err != nil {
				return nil, err
			}
			if want {
				b = utf8.AppendRune(b, r)
			}
		case c < utf8.RuneSelf:
			sc.pos++
			if want {
				b = append(b, c)
			}
		default:
			r, size := utf8.DecodeRune(sc.data[sc.pos:])
			if r == utf8.RuneError && size == 1 {
				return nil, bad(fmt.Sprintf("byte 0x%02x at offset %d", c, sc.pos))
			}
			sc.pos += size
			if want {
				b = append(b, sc.data[sc.pos-size:sc.pos]...)
			}
		}
	}
	return nil, badRequest(joinField(sc.prefix, "body"), "incomplete JSON")
}

// escape decodes the escape at sc.pos (its backslash); a surrogate must be
// a high one followed at once by a low one.
func (sc *jsonScanner) escape(bad func(string) *apiError) (rune, *apiError) {
	if sc.pos+1 >= len(sc.data) {
		return 0, sc.malformed()
	}
	switch e := sc.data[sc.pos+1]; e {
	case '"', '\\', '/':
		sc.pos += 2
		return rune(e), nil
	case 'b':
		sc.pos += 2
		return '\b', nil
	case 'f':
		sc.pos += 2
		return '\f', nil
	case 'n':
		sc.pos += 2
		return '\n', nil
	case 'r':
		sc.pos += 2
		return '\r', nil
	case 't':
		sc.pos += 2
		return '\t', nil
	case 'u':
	default:
		return 0, sc.malformed()
	}
	r, ok := sc.hex4(sc.pos + 2)
	if !ok {
		return 0, sc.malformed()
	}
	at := sc.pos
	sc.pos += 6
	if !utf16.IsSurrogate(r) {
		return r, nil
	}
	if r < 0xdc00 && sc.pos+1 < len(sc.data) && sc.data[sc.pos] == '\\' && sc.data[sc.pos+1] == 'u' {
		if lo, ok := sc.hex4(sc.pos + 2); ok && lo >= 0xdc00 && lo <= 0xdfff {
			sc.pos += 6
			return utf16.DecodeRune(r, lo), nil
		}
	}
	return 0, bad(fmt.Sprintf("lone surrogate %s at offset %d", sc.data[at:at+6], at))
}

func (sc *jsonScanner) hex4(at int) (rune, bool) {
	if at+4 > len(sc.data) {
		return 0, false
	}
	n, err := strconv.ParseUint(string(sc.data[at:at+4]), 16, 32)
	return rune(n), err == nil
}

// number scans -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)?
func (sc *jsonScanner) number() *apiError {
	d := sc.data
	i := sc.pos
	if d[i] == '-' {
		i++
	}
	digits := func() int {
		start := i
		for i < len(d) && d[i] >= '0' && d[i] <= '9' {
			i++
		}
		return i - start
	}
	switch {
	case i < len(d) && d[i] == '0':
		i++
	case digits() == 0:
		sc.pos = i
		return sc.malformed()
	}
	if i < len(d) && d[i] == '.' {
		i++
		if digits() == 0 {
			sc.pos = i
			return sc.malformed()
		}
	}
	if i < len(d) && (d[i] == 'e' || d[i] == 'E') {
		i++
		if i < len(d) && (d[i] == '+' || d[i] == '-') {
			i++
		}
		if digits() == 0 {
			sc.pos = i
			return sc.malformed()
		}
	}
	sc.pos = i
	return nil
}

func fieldOrBody(path, prefix string) string {
	if path == "" {
		return joinField(prefix, "body")
	}
	return path
}

// keySet is the keys of one object so far; most objects have a few, kept
// in place, and a map takes over for large ones (a sync's cursors).
type keySet struct {
	few  [8][]byte
	n    int
	many map[string]struct{}
}

// add reports false when key was there already.
func (k *keySet) add(key []byte) bool {
	if k.many != nil {
		if _, ok := k.many[string(key)]; ok {
			return false
		}
		k.many[string(key)] = struct{}{}
		return true
	}
	for _, s := range k.few[:k.n] {
		if bytes.Equal(s, key) {
			return false
		}
	}
	if k.n < len(k.few) {
		k.few[k.n] = key
		k.n++
		return true
	}
	k.many = make(map[string]struct{}, 64)
	for _, s := range k.few {
		k.many[string(s)] = struct{}{}
	}
	k.many[string(key)] = struct{}{}
	return true
}

// jsonShape is what checkJSON needs of a Go type: a struct's exact field
// names (with their types), or a map's or slice's element type.
type jsonShape struct {
	kind reflect.Kind
	t    reflect.Type // the struct
	elem reflect.Type
}

var rawMessageType = reflect.TypeFor[json.RawMessage]()

func shapeOf(t reflect.Type) jsonShape {
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == nil || t == rawMessageType {
		return jsonShape{}
	}
	switch t.Kind() {
	case reflect.Struct:
		return jsonShape{kind: reflect.Struct, t: t}
	case reflect.Map:
		return jsonShape{kind: reflect.Map, elem: t.Elem()}
	case reflect.Slice, reflect.Array:
		if t.Elem().Kind() == reflect.Uint8 {
			return jsonShape{kind: t.Kind()} // base64 string
		}
		return jsonShape{kind: reflect.Slice, elem: t.Elem()}
	}
	return jsonShape{kind: t.Kind()}
}

// fields calls f with each field's JSON name and type until f says stop.
func (s jsonShape) fields(f func(name string, t reflect.Type) bool) {
	for i := range s.t.NumField() {
		sf := s.t.Field(i)
		name, _, _ := strings.Cut(sf.Tag.Get("json"), ",")
		if !sf.IsExported() || name == "-" {
			continue
		}
		if name == "" {
			name = sf.Name
		}
		if !f(name, sf.Type) {
			return
		}
	}
}

// field is the type of the struct field named exactly key.
func (s jsonShape) field(key []byte) (t reflect.Type, ok bool) {
	s.fields(func(name string, ft reflect.Type) bool {
		if name == string(key) {
			t, ok = ft, true
		}
		return !ok
	})
	return t, ok
}

func (s jsonShape) unknown(field, key string) *apiError {
	var near string
	s.fields(func(name string, _ reflect.Type) bool {
		if strings.EqualFold(name, key) {
			near = name
		}
		return near == ""
	})
	if near != "" {
		return badRequest(field, "is not a known field; did you mean %q? (names are case-sensitive)", near)
	}
	return badRequest(field, "is not a known field")
}
