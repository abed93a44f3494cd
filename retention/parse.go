package retention

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/offlinebox/offlinebox/redisstore"
	"github.com/offlinebox/offlinebox/schemas"
)

// The file's layout. Every leaf is a scalar that remembers its line; the
// decoder refuses fields it does not know.
type fileDoc struct {
	Defaults struct {
		Inbox   scalar `yaml:"inbox"`
		History scalar `yaml:"history"`
	} `yaml:"defaults"`
	Policies    []policyDoc `yaml:"policies"`
	AllowShrink scalar      `yaml:"allow_shrink"`
}

type policyDoc struct {
	Name  scalar `yaml:"name"`
	Match struct {
		Conv        scalar `yaml:"conv"`
		ConvPrefix  scalar `yaml:"conv_prefix"`
		Tag         scalar `yaml:"tag"`
		ConvType    scalar `yaml:"conv_type"`
		ContentType scalar `yaml:"content_type"`
		Kind        scalar `yaml:"kind"`
	} `yaml:"match"`
	Inbox     scalar `yaml:"inbox"`
	History   scalar `yaml:"history"`
	AuditHold scalar `yaml:"audit_hold"`
}

// scalar is one YAML scalar with its line; Line 0 means absent.
type scalar struct {
	Value string
	Line  int
}

func (s *scalar) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind != yaml.ScalarNode {
		return &Error{Line: n.Line, Msg: "want a single value, not a list or a mapping"}
	}
	s.Value, s.Line = n.Value, n.Line
	return nil
}

func (s scalar) set() bool { return s.Line > 0 }

// Error is a refused policy file; Line is 0 when no line is to blame.
type Error struct {
	File string
	Line int
	Msg  string
	err  error // ErrEmpty, or nil
}

// Unwrap is ErrEmpty for an empty or truncated file.
func (e *Error) Unwrap() error { return e.err }

func (e *Error) Error() string {
	switch {
	case e.File != "" && e.Line > 0:
		return fmt.Sprintf("retention policy %s line %d: %s", e.File, e.Line, e.Msg)
	case e.Line > 0:
		return fmt.Sprintf("retention policy line %d: %s", e.Line, e.Msg)
	case e.File != "":
		return fmt.Sprintf("retention policy %s: %s", e.File, e.Msg)
	}
	return "retention policy: " + e.Msg
}

var (
	convTypeNames = map[schemas.ConvType]string{
		schemas.ConvType_CONV_TYPE_DIRECT: "direct",
		schemas.ConvType_CONV_TYPE_GROUP:  "group",
	}
	kindNames = map[schemas.Kind]string{
		schemas.Kind_KIND_MESSAGE:      "message",
		schemas.Kind_KIND_MEMBER_JOIN:  "member_join",
		schemas.Kind_KIND_MEMBER_LEAVE: "member_leave",
	}
)

func lookupName[K comparable](names map[K]string, v string) (K, bool) {
	for k, n := range names {
		if n == v {
			return k, true
		}
	}
	var zero K
	return zero, false
}

// ErrEmpty is the error of a policy file that holds nothing (no defaults,
// no policies) or a top-level key with nothing under it: a file truncated
// or written half-way, never a policy to delete by.
var ErrEmpty = errors.New("the file is empty or truncated")

// Parse reads and validates a policy file; file names it in errors. An
// empty file, or one whose defaults or policies key holds nothing, is
// refused (ErrEmpty): the defaults alone are written out as such.
func Parse(file string, data []byte) (*Set, error) {
	if err := notTruncated(file, data); err != nil {
		return nil, err
	}
	var doc fileDoc
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&doc); err != nil && !errors.Is(err, io.EOF) {
		return nil, decodeError(file, err)
	}
	fail := func(line int, format string, args ...any) error {
		return &Error{File: file, Line: line, Msg: fmt.Sprintf(format, args...)}
	}
	sum := sha256.Sum256(data)
	set := &Set{Source: file, DefaultInbox: DefaultInbox, DefaultHistory: History{Keep: DefaultHistory},
		Digest: hex.EncodeToString(sum[:])}
	if a := doc.AllowShrink; a.set() {
		day, err := time.Parse(time.DateOnly, a.Value)
		if err != nil {
			return nil, fail(a.Line, "allow_shrink %q is not a date like 2026-01-31", a.Value)
		}
		set.AllowShrink = day
	}
	if d := doc.Defaults.Inbox; d.set() {
		w, err := inboxWindow(d)
		if err != nil {
			return nil, fail(d.Line, "defaults.inbox: %v", err)
		}
		set.DefaultInbox = w
	}
	if d := doc.Defaults.History; d.set() {
		h, err := parseHistory(d.Value)
		if err != nil {
			return nil, fail(d.Line, "defaults.history: %v", err)
		}
		set.DefaultHistory = h
	}
	names := map[string]int{}
	for i, pd := range doc.Policies {
		p, err := compilePolicy(i, pd)
		if err != nil {
			var le *Error
			if errors.As(err, &le) {
				le.File = file
			}
			return nil, err
		}
		if prev, dup := names[p.Name]; dup {
			return nil, fail(pd.Name.Line, "policy name %q is already used on line %d", p.Name, prev)
		}
		names[p.Name] = p.Line
		for _, q := range set.Policies {
			if q.Match == p.Match {
				return nil, fail(p.Line, "policy %q selects exactly what %q (line %d) selects; merge them", p.Name, q.Name, q.Line)
			}
		}
		set.Policies = append(set.Policies, p)
	}
	return set, nil
}

// notTruncated refuses a file without a document, and a top-level key
// with nothing under it (what is left of a file cut after "defaults:").
func notTruncated(file string, data []byte) error {
	var root yaml.Node
	err := yaml.Unmarshal(data, &root)
	if err != nil {
		return nil // the decoder names the line
	}
	if len(root.Content) == 0 || root.Content[0].Kind != yaml.MappingNode || len(root.Content[0].Content) == 0 {
		return &Error{File: file, Msg: ErrEmpty.Error() + ": it names no defaults and no policies (write the defaults out to keep them)", err: ErrEmpty}
	}
	m := root.Content[0].Content
	for i := 0; i+1 < len(m); i += 2 {
		if v := m[i+1]; v.Tag == "!!null" || (v.Kind != yaml.ScalarNode && len(v.Content) == 0) {
			return &Error{File: file, Line: m[i].Line, Msg: fmt.Sprintf("%s: %q holds nothing", ErrEmpty, m[i].Value), err: ErrEmpty}
		}
	}
	return nil
}

// decodeError turns the YAML decoder's error into an Error naming the
// file and the line (for syntax errors, the line the YAML parser names).
func decodeError(file string, err error) error {
	var le *Error
	if errors.As(err, &le) {
		le.File = file
		return le
	}
	var te *yaml.TypeError
	if errors.As(err, &te) && len(te.Errors) > 0 {
		msg := te.Errors[0]
		if i := strings.Index(msg, " in type "); i >= 0 {
			msg = msg[:i]
		}
		msg = strings.Replace(msg, " not found", " is not known", 1)
		var line int
		if rest, ok := strings.CutPrefix(msg, "line "); ok {
			if n, tail, ok := strings.Cut(rest, ": "); ok {
				if v, err := strconv.Atoi(n); err == nil {
					line, msg = v, tail
				}
			}
		}
		return &Error{File: file, Line: line, Msg: msg}
	}
	return &Error{File: file, Msg: strings.TrimPrefix(err.Error(), "yaml: ")}
}

// compilePolicy checks one entry of policies.
func compilePolicy(i int, pd policyDoc) (Policy, error) {
	line := firstLine(pd.Name, pd.Match.Conv, pd.Match.ConvPrefix, pd.Match.Tag, pd.Match.ConvType,
		pd.Match.ContentType, pd.Match.Kind, pd.Inbox, pd.History, pd.AuditHold)
	fail := func(line int, format string, args ...any) error {
		return &Error{Line: line, Msg: fmt.Sprintf(format, args...)}
	}
	p := Policy{Name: pd.Name.Value, Line: line}
	if !pd.Name.set() || p.Name == "" {
		return p, fail(line, "policy %d has no name", i+1)
	}
	m := pd.Match
	var err error
	if p.Match.Conv, err = idSelector("conv", m.Conv); err != nil {
		return p, err
	}
	if p.Match.ConvPrefix, err = idSelector("conv_prefix", m.ConvPrefix); err != nil {
		return p, err
	}
	if p.Match.Tag, err = idSelector("tag", m.Tag); err != nil {
		return p, err
	}
	if m.ConvType.set() {
		t, ok := lookupName(convTypeNames, m.ConvType.Value)
		if !ok {
			return p, fail(m.ConvType.Line, "conv_type %q is not direct or group", m.ConvType.Value)
		}
		p.Match.ConvType = t
	}
	if m.ContentType.set() {
		if m.ContentType.Value == "" || len(m.ContentType.Value) > schemas.MaxIDBytes {
			return p, fail(m.ContentType.Line, "content_type must be 1 to %d bytes", schemas.MaxIDBytes)
		}
		p.Match.ContentType = m.ContentType.Value
	}
	if m.Kind.set() {
		k, ok := lookupName(kindNames, m.Kind.Value)
		if !ok {
			return p, fail(m.Kind.Line, "kind %q is not message, member_join or member_leave", m.Kind.Value)
		}
		p.Match.Kind = k
	}
	switch {
	case m.Conv.set() && m.ConvPrefix.set():
		return p, fail(m.ConvPrefix.Line, "policy %q: conv and conv_prefix together; choose one", p.Name)
	case m.ContentType.set() && m.Kind.set():
		return p, fail(m.Kind.Line, "policy %q: content_type and kind together; choose one", p.Name)
	case p.Match == Match{}:
		return p, fail(line, "policy %q selects nothing: give match at least one of conv, conv_prefix, tag, conv_type, content_type, kind (or set defaults)", p.Name)
	}
	if pd.Inbox.set() {
		w, err := inboxWindow(pd.Inbox)
		if err != nil {
			return p, fail(pd.Inbox.Line, "policy %q inbox: %v", p.Name, err)
		}
		p.Inbox = &w
	}
	if pd.History.set() {
		h, err := parseHistory(pd.History.Value)
		if err != nil {
			return p, fail(pd.History.Line, "policy %q history: %v", p.Name, err)
		}
		p.History = &h
	}
	if pd.AuditHold.set() {
		d, err := ParseDuration(pd.AuditHold.Value)
		if err != nil {
			return p, fail(pd.AuditHold.Line, "policy %q audit_hold: %v", p.Name, err)
		}
		p.AuditHold = d
	}
	if p.Inbox == nil && p.History == nil && p.AuditHold == 0 {
		return p, fail(line, "policy %q sets none of inbox, history, audit_hold", p.Name)
	}
	return p, nil
}

func idSelector(field string, s scalar) (string, error) {
	if !s.set() {
		return "", nil
	}
	if err := schemas.ValidID(field, s.Value); err != nil {
		return "", &Error{Line: s.Line, Msg: err.Error()}
	}
	return s.Value, nil
}

func firstLine(ss ...scalar) int {
	line := 0
	for _, s := range ss {
		if s.set() && (line == 0 || s.Line < line) {
			line = s.Line
		}
	}
	return line
}

func inboxWindow(s scalar) (time.Duration, error) {
	w, err := ParseDuration(s.Value)
	if err != nil {
		return 0, err
	}
	if w < redisstore.MinRetention {
		return 0, fmt.Errorf("%s is below the least inbox window, %s (a device may still need what another acked)",
			s.Value, FormatDuration(redisstore.MinRetention))
	}
	return w, nil
}

func parseHistory(v string) (History, error) {
	if v == "none" {
		return History{None: true}, nil
	}
	d, err := ParseDuration(v)
	if err != nil {
		return History{}, fmt.Errorf("%w, or none", err)
	}
	return History{Keep: d}, nil
}

// ParseDuration reads a positive duration: a number of days (30d), weeks
// (2w) or years of 365 days (1y), or a Go duration (36h, 90m).
func ParseDuration(v string) (time.Duration, error) {
	if v == "" {
		return 0, fmt.Errorf("is empty: want a duration like 30d, 2w, 1y or 36h")
	}
	units := map[byte]time.Duration{'d': 24 * time.Hour, 'w': 7 * 24 * time.Hour, 'y': 365 * 24 * time.Hour}
	var d time.Duration
	if u, ok := units[v[len(v)-1]]; ok && len(v) > 1 {
		n, err := strconv.ParseUint(v[:len(v)-1], 10, 16)
		if err != nil {
			return 0, fmt.Errorf("%q is not a duration like 30d, 2w, 1y or 36h", v)
		}
		d = time.Duration(n) * u
	} else {
		var err error
		if d, err = time.ParseDuration(v); err != nil {
			return 0, fmt.Errorf("%q is not a duration like 30d, 2w, 1y or 36h", v)
		}
	}
	if d <= 0 {
		return 0, fmt.Errorf("%q is not positive", v)
	}
	return d, nil
}

// FormatDuration writes whole days as "Nd", anything else as Go does.
func FormatDuration(d time.Duration) string {
	if d > 0 && d%(24*time.Hour) == 0 {
		return strconv.FormatInt(int64(d/(24*time.Hour)), 10) + "d"
	}
	return d.String()
}
