package api

import (
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
	if err := sc.value(t, prefix, 0); err != nil {
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

// value scans one value at path; t is the Go type it will be decoded into
// (nil: any).
func (sc *jsonScanner) value(t reflect.Type, path string, depth int) *apiError {
	if sc.pos >= len(sc.data) {
		return badRequest(joinField(sc.prefix, "body"), "incomplete JSON")
	}
	switch c := sc.data[sc.pos]; {
	case c == '{':
		if depth >= maxJSONDepth {
			return badRequest(fieldOrBody(path, sc.prefix), "nests deeper than %d levels", maxJSONDepth)
		}
		return sc.object(t, path, depth+1)
	case c == '[':
		if depth >= maxJSONDepth {
			return badRequest(fieldOrBody(path, sc.prefix), "nests deeper than %d levels", maxJSONDepth)
		}
		return sc.array(t, path, depth+1)
	case c == '"':
		_, err := sc.str(path, false)
		return err
	case c == '-' || (c >= '0' && c <= '9'):
		return sc.number()
	default:
		for _, lit := range []string{"true", "false", "null"} {
			if strings.HasPrefix(string(sc.data[sc.pos:min(len(sc.data), sc.pos+len(lit))]), lit) {
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
	seen := map[string]bool{}
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
		key, err := sc.str(path, true)
		if err != nil {
			return err
		}
		field := joinField(path, key)
		if seen[key] {
			return badRequest(field, "is given more than once")
		}
		seen[key] = true
		var elem reflect.Type
		switch {
		case shape.fields != nil:
			var ok bool
			if elem, ok = shape.fields[key]; !ok {
				return unknownField(field, key, shape.fields)
			}
		case shape.kind == reflect.Map:
			elem = shape.elem
		}
		sc.space()
		if sc.pos >= len(sc.data) || sc.data[sc.pos] != ':' {
			return sc.malformed()
		}
		sc.pos++
		sc.space()
		if err := sc.value(elem, field, depth); err != nil {
			return err
		}
		sc.space()
		if sc.pos >= len(sc.data) {
			return sc.malformed()
		}
		switch sc.data[sc.pos] {
		case ',':
			sc.pos++
		case '}':
			sc.pos++
			return nil
		default:
			return sc.malformed()
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
		if err := sc.value(elem, fmt.Sprintf("%s[%d]", path, i), depth); err != nil {
			return err
		}
		sc.space()
		if sc.pos >= len(sc.data) {
			return sc.malformed()
		}
		switch sc.data[sc.pos] {
		case ',':
			sc.pos++
		case ']':
			sc.pos++
			return nil
		default:
			return sc.malformed()
		}
	}
}

// str scans a string at sc.pos (its opening quote); it returns the decoded
// string when want (keys). Invalid UTF-8 names the value's field, or for a
// key the object holding it.
func (sc *jsonScanner) str(path string, want bool) (string, *apiError) {
	sc.pos++ // "
	var b strings.Builder
	bad := func(what string) *apiError {
		if want {
			return badRequest(fieldOrBody(path, sc.prefix), "holds a key that is not valid UTF-8 (%s)", what)
		}
		return badRequest(fieldOrBody(path, sc.prefix), "is not valid UTF-8 (%s)", what)
	}
	for sc.pos < len(sc.data) {
		c := sc.data[sc.pos]
		switch {
		case c == '"':
			sc.pos++
			return b.String(), nil
		case c < 0x20:
			return "", sc.malformed()
		case c == '\\':
			r, err := sc.escape(bad)
			if err != nil {
				return "", err
			}
			if want {
				b.WriteRune(r)
			}
		case c < utf8.RuneSelf:
			sc.pos++
			if want {
				b.WriteByte(c)
			}
		default:
			r, size := utf8.DecodeRune(sc.data[sc.pos:])
			if r == utf8.RuneError && size == 1 {
				return "", bad(fmt.Sprintf("byte 0x%02x at offset %d", c, sc.pos))
			}
			sc.pos += size
			if want {
				b.WriteRune(r)
			}
		}
	}
	return "", badRequest(joinField(sc.prefix, "body"), "incomplete JSON")
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

func unknownField(field, key string, fields map[string]reflect.Type) *apiError {
	for name := range fields {
		if strings.EqualFold(name, key) {
			return badRequest(field, "is not a known field; did you mean %q? (names are case-sensitive)", name)
		}
	}
	return badRequest(field, "is not a known field")
}

// jsonShape is what checkJSON needs of a Go type: a struct's exact field
// names (with their types), or a map's or slice's element type.
type jsonShape struct {
	kind   reflect.Kind
	fields map[string]reflect.Type
	elem   reflect.Type
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
		fields := map[string]reflect.Type{}
		for i := range t.NumField() {
			f := t.Field(i)
			name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			if !f.IsExported() || name == "-" {
				continue
			}
			if name == "" {
				name = f.Name
			}
			fields[name] = f.Type
		}
		return jsonShape{kind: reflect.Struct, fields: fields}
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
