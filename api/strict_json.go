package api

import (
	"bytes"
	"encoding/json"
	"errors"
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
	sc.data, sc.prefix, sc.stack = data, prefix, sc.stack[:0]
	sc.tok.ResetStrict(data)
	sc.tok.Space()
	if err := sc.value(t, 0); err != nil {
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
	clear(sc.stack) // the keys are the body's bytes
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
	// stack is where the value being read is, below prefix: spelled out
	// (path) only when an error names it.
	stack []step
}

// step is one level of a value's place: a member of an object (key), or
// an item of an array (key nil, index).
type step struct {
	key   []byte
	index int
}

// path names the value being read: prefix, then each member's key and
// each item's index.
func (sc *jsonScanner) path() string {
	p := sc.prefix
	for _, st := range sc.stack {
		if st.key != nil {
			p = joinField(p, string(st.key))
		} else {
			p = p + "[" + strconv.Itoa(st.index) + "]"
		}
	}
	return p
}

func (sc *jsonScanner) malformed() *apiError {
	return badRequest(joinField(sc.prefix, "body"), "malformed JSON at offset %d", sc.tok.Pos())
}

func (sc *jsonScanner) incomplete() *apiError {
	return badRequest(joinField(sc.prefix, "body"), "incomplete JSON")
}

// value scans one value at the stack's place (white space before it
// read); t is the Go type it will be decoded into (nil: any).
func (sc *jsonScanner) value(t reflect.Type, depth int) *apiError {
	if sc.tok.Remaining() == 0 {
		return sc.incomplete()
	}
	switch c := sc.data[sc.tok.Pos()]; {
	case c == '{', c == '[':
		if depth >= maxJSONDepth {
			return badRequest(fieldOrBody(sc.path(), sc.prefix), "nests deeper than %d levels", maxJSONDepth)
		}
		if c == '{' {
			return sc.object(t, depth+1)
		}
		return sc.array(t, depth+1)
	case c == '"':
		_, err := sc.str(false)
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

func (sc *jsonScanner) object(t reflect.Type, depth int) *apiError {
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
		key, err := sc.str(true)
		if err != nil {
			return err
		}
		sc.stack = append(sc.stack, step{key: key})
		if !seen.add(key) {
			return badRequest(sc.path(), "is given more than once")
		}
		var elem reflect.Type
		switch shape.kind {
		case reflect.Struct:
			var ok bool
			if elem, ok = shape.field(key); !ok {
				return shape.unknown(sc.path(), string(key))
			}
		case reflect.Map:
			elem = shape.elem
		}
		if !sc.tok.Consume(':') {
			return sc.malformed()
		}
		sc.tok.Space()
		if err := sc.value(elem, depth); err != nil {
			return err
		}
		sc.stack = sc.stack[:len(sc.stack)-1]
		if done, err := sc.separator('}'); done || err != nil {
			return err
		}
	}
}

func (sc *jsonScanner) array(t reflect.Type, depth int) *apiError {
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
		sc.stack = append(sc.stack, step{index: i})
		if err := sc.value(elem, depth); err != nil {
			return err
		}
		sc.stack = sc.stack[:len(sc.stack)-1]
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
// holding it: the stack's place either way.
func (sc *jsonScanner) str(want bool) ([]byte, *apiError) {
	s := sc.tok.StringBytes()
	if err := sc.tok.Err(); err != nil {
		return nil, sc.strError(want, err)
	}
	switch {
	case !want:
		return nil, nil
	case sc.tok.Buffered(s):
		return bytes.Clone(s), nil
	case s == nil:
		return []byte{}, nil // a key's presence is its being non-nil
	}
	return s, nil
}

func (sc *jsonScanner) strError(want bool, err error) *apiError {
	var invalid *jsontok.InvalidTextError
	switch {
	case errors.As(err, &invalid) && want:
		return badRequest(fieldOrBody(sc.path(), sc.prefix), "holds a key that is not valid UTF-8 (%s)", invalid.What)
	case invalid != nil:
		return badRequest(fieldOrBody(sc.path(), sc.prefix), "is not valid UTF-8 (%s)", invalid.What)
	case sc.tok.Remaining() == 0:
		return sc.incomplete() // the string never ends
	}
	return sc.malformed()
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
	kind   reflect.Kind
	fields []shapeField // the struct's
	elem   reflect.Type
}

type shapeField struct {
	name string
	t    reflect.Type
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
		return jsonShape{kind: reflect.Struct, fields: fieldsOf(t)}
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

// structFields caches each request struct's JSON field names, as
// encoding/json caches its own: reading the tags again for every key cost
// more than the rest of the walk. It holds a few entries, one per request
// type, and only ever what the types say.
var structFields sync.Map // reflect.Type → []shapeField

// fieldsOf is the JSON name and type of each field of struct t.
func fieldsOf(t reflect.Type) []shapeField {
	if fs, ok := structFields.Load(t); ok {
		return fs.([]shapeField)
	}
	var fs []shapeField
	for i := range t.NumField() {
		sf := t.Field(i)
		name, _, _ := strings.Cut(sf.Tag.Get("json"), ",")
		if !sf.IsExported() || name == "-" {
			continue
		}
		if name == "" {
			name = sf.Name
		}
		fs = append(fs, shapeField{name: name, t: sf.Type})
	}
	structFields.Store(t, fs)
	return fs
}

// field is the type of the struct field named exactly key.
func (s jsonShape) field(key []byte) (reflect.Type, bool) {
	for _, f := range s.fields {
		if f.name == string(key) {
			return f.t, true
		}
	}
	return nil, false
}

func (s jsonShape) unknown(field, key string) *apiError {
	for _, f := range s.fields {
		if strings.EqualFold(f.name, key) {
			return badRequest(field, "is not a known field; did you mean %q? (names are case-sensitive)", f.name)
		}
	}
	return badRequest(field, "is not a known field")
}
