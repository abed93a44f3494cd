package redisstore

import (
	"context"
	_ "embed"
	"encoding/json"
	"fmt"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/redis/go-redis/v9"

	"github.com/offlinebox/offlinebox/schemas"
)

var (
	//go:embed lua/rejections_add.lua
	rejectionsAddLua    string
	rejectionsAddScript = redis.NewScript(rejectionsAddLua)
)

// How long and how many refusals a user's list keeps. A week covers a
// device away for days; 200 fit one answer of GET /v1/rejections (about
// 40 KB at the longest reasons), so it needs no paging.
const (
	RejectionsKept   = 7 * 24 * time.Hour
	MaxRejectionsPer = 200
	// MaxRejectionReason bounds a reason's bytes as kept (cut at a rune).
	MaxRejectionReason = 512
)

// Rejection is a record of the user's that the pipeline refused for good,
// and why. At is the refusal's time (the dead letter's), which also
// orders the list.
type Rejection struct {
	Sender      string `json:"-"`
	Conv        string `json:"conv_id"`
	ClientMsgID string `json:"client_msg_id"`
	// Code is the public code (schemas.RefusalCodes), Reason its sentence.
	Code   string `json:"code,omitempty"`
	Reason string `json:"reason"`
	AtMS   int64  `json:"at_ms"`
}

// AddRejections keeps refusals in their senders' lists: one script per
// sender, all in one pipeline; it returns how many were new (a refusal
// kept already changes nothing, so a replay is harmless). A sender whose
// list can never be written (a key of the wrong type) fails alone: the
// error is then ItemErrors, naming each of that sender's refusals by its
// index in rs, and every other sender's were kept; a failure to wait for
// is returned as it is.
func (s *Store) AddRejections(ctx context.Context, rs []Rejection, now time.Time) (int, error) {
	if len(rs) == 0 {
		return 0, nil
	}
	bySender := map[string][]any{}
	indexes := map[string][]int{}
	var order []string
	for i, r := range rs {
		r.Reason = CutRejectionReason(r.Reason)
		data, err := json.Marshal(r)
		if err != nil {
			return 0, fmt.Errorf("encode rejection of %s: %w", r.ClientMsgID, err)
		}
		if bySender[r.Sender] == nil {
			order = append(order, r.Sender)
		}
		bySender[r.Sender] = append(bySender[r.Sender], strconv.FormatInt(r.AtMS, 10), data)
		indexes[r.Sender] = append(indexes[r.Sender], i)
	}
	calls := make([]scriptCall, len(order))
	for i, u := range order {
		args := append([]any{now.UnixMilli(), RejectionsKept.Milliseconds(), MaxRejectionsPer}, bySender[u]...)
		calls[i] = scriptCall{keys: []string{s.keys.Rejections(u)}, args: args}
	}
	ctx, cancel := context.WithTimeout(ctx, s.cfg.CallTimeout)
	defer cancel()
	cmds, err := s.evalPiped(ctx, rejectionsAddScript, calls)
	if cmds == nil && err != nil {
		return 0, fmt.Errorf("keep rejections of %d senders: %w", len(order), err)
	}
	return countFailures(cmds, func(i int) []int { return indexes[order[i]] },
		func(i int) string { return "keep rejections of " + order[i] })
}

// Rejections reads the user's refusals at or after since (ms), oldest
// first: the whole kept list at most.
func (s *Store) Rejections(ctx context.Context, user string, since int64) ([]Rejection, error) {
	ctx, cancel := context.WithTimeout(ctx, s.cfg.CallTimeout)
	defer cancel()
	vals, err := s.rdb.ZRangeByScore(ctx, s.keys.Rejections(user), &redis.ZRangeBy{
		Min: strconv.FormatInt(since, 10), Max: "+inf", Count: MaxRejectionsPer}).Result()
	if err != nil {
		return nil, fmt.Errorf("read rejections of %s: %w", user, err)
	}
	out := make([]Rejection, 0, len(vals))
	for _, v := range vals {
		var r Rejection
		if json.Unmarshal([]byte(v), &r) != nil {
			continue // not ours to answer: the script writes only what Go encoded
		}
		if !publicRejection(&r) {
			continue
		}
		r.Sender = user
		out = append(out, r)
	}
	return out, nil
}

// publicRejection puts a refusal kept before refusals carried a code into
// the public vocabulary: its code read from the reason's beginning
// (schemas.LegacyRefusal) and the code's sentence in place of the
// reason, which may name internals. It reports false for one kept for a
// record that was sequenced after all: that is nobody's refusal.
func publicRejection(r *Rejection) bool {
	if r.Code != "" {
		r.Code = schemas.PublicRefusal(r.Code)
		r.Reason = schemas.RefusalSentence(r.Code)
		return true
	}
	code, sequenced := schemas.LegacyRefusal(r.Reason)
	r.Code, r.Reason = code, schemas.RefusalSentence(code)
	return !sequenced
}

// CutRejectionReason bounds a reason at MaxRejectionReason bytes, on a
// rune's edge: what a sender is told, live or from the list.
func CutRejectionReason(s string) string {
	if len(s) <= MaxRejectionReason {
		return s
	}
	i := MaxRejectionReason
	for i > 0 && !utf8.RuneStart(s[i]) {
		i--
	}
	return s[:i]
}
