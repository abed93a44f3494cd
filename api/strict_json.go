package api

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strconv"
	"strings"
	"sync"

	"github.com/offlinebox/offlinebox/jsontok"
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
	sc := scanners.Get().(*jsonScanner)
	defer sc.release()
	sc.data, sc.prefix = data, prefix
	sc.tok.Reset(data)
	sc.tok.Space()
	if err := sc.value(t, loc{parent: prefix, index: -1}, 0); err != nil {
		return err
	}
	if sc.tok.Space(); sc.tok.Remaining() > 0 {
		return badRequest(joinField(prefix, "body"), "trailing data after the JSON value")
	}
	return nil
}

// scanners keeps scanners between requests with the buffer their
// tokenizer unescapes strings into, so that a body with escapes costs no
// allocation once the buffer has grown.
var scanners = sync.Pool{New: func() any { return new(jsonScanner) }}

// maxKeptUnescaped bounds the buffer a released scanner keeps.
const maxKeptUnescaped = 16 << 10

func (sc *jsonScanner) release() {
	sc.data = nil
	sc.tok.Release(maxKeptUnescaped)
	scanners.Put(sc)
}

// jsonScanner walks a body with the wire's tokenizer: the tokenizer
// reads white space, strings, numbers and literals; the walk says what
// was expected where, and names the field.
type jsonScanner struct {
	tok    jsontok.Tokenizer
	data   []byte
	prefix string
}

func (sc *jsonScanner) malformed() *apiError {
	return badRequest(joinField(sc.prefix, "body"), "malformed JSON at offset %d", sc.tok.Pos())
}

func (sc *jsonScanner) incomplete() *apiError {
	return badRequest(joinField(sc.prefix, "body"), "incomplete JSON")
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

// value scans one value at l (white space before it read); t is the Go
// type it will be decoded into (nil: any).
func (sc *jsonScanner) value(t reflect.Type, l loc, depth int) *apiError {
	if sc.tok.Remaining() == 0 {
		return sc.incomplete()
	}
	switch c := sc.data[sc.tok.Pos()]; {
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
		sc.tok.Number()
	case c == 't':
		sc.tok.Literal("true")
	case c == 'f':
		sc.tok.Literal("false")
	case c == 'n':
		sc.tok.Literal("null")
	default:
		return sc.malformed()
	}
	if sc.tok.Err() != nil {
		return sc.malformed()
	}
	return nil
}

func (sc *jsonScanner) object(t reflect.Type, path string, depth int) *apiError {
	sc.tok.Consume('{')
	shape := shapeOf(t)
	var seen keySet
	if sc.tok.Consume('}') {
		return nil
	}
	for {
		if sc.tok.Peek() != '"' {
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
		if !sc.tok.Consume(':') {
			return sc.malformed()
		}
		sc.tok.Space()
		if err := sc.value(elem, at, depth); err != nil {
			return err
		}
		if done, err := sc.separator('}'); done || err != nil {
			return err
		}
	}
}

func (sc *jsonScanner) array(t reflect.Type, path string, depth int) *apiError {
	sc.tok.Consume('[')
	shape := shapeOf(t)
	var elem reflect.Type
	if shape.kind == reflect.Slice {
		elem = shape.elem
	}
	if sc.tok.Consume(']') {
		return nil
	}
	for i := 0; ; i++ {
		sc.tok.Space()
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
	switch {
	case sc.tok.Consume(','):
		return false, nil
	case sc.tok.Consume(closer):
		return true, nil
	}
	return false, sc.malformed()
}

// str scans a string at the tokenizer's position (its opening quote); it
// returns the decoded bytes when want (keys), kept beyond the next
// string. Invalid UTF-8 names the value's field, or for a key the object
// holding it.
func (sc *jsonScanner) str(l loc, want bool) ([]byte, *apiError) {
	s, invalid := sc.tok.StrictString()
	switch {
	case invalid != "" && want:
		return nil, badRequest(fieldOrBody(l.String(), sc.prefix), "holds a key that is not valid UTF-8 (%s)", invalid)
	case invalid != "":
		return nil, badRequest(fieldOrBody(l.String(), sc.prefix), "is not valid UTF-8 (%s)", invalid)
	case sc.tok.Err() != nil && sc.tok.Remaining() == 0:
		return nil, sc.incomplete() // the string never ends
	case sc.tok.Err() != nil:
		return nil, sc.malformed()
	case !want:
		return nil, nil
	case sc.tok.Buffered(s):
		return bytes.Clone(s), nil
	case s == nil:
		return []byte{}, nil // a key's presence is its being non-nil
	}
	return s, nil
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
