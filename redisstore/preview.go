package redisstore

import (
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strconv"

	"github.com/redis/go-redis/v9"

	"github.com/offlinebox/offlinebox/schemas"
)

var (
	//go:embed lua/preview_set.lua
	previewSetLua    string
	previewSetScript = redis.NewScript(previewSetLua)
)

// Preview is the last message of a conversation as the list shows it.
type Preview struct {
	Seq    uint64 `json:"seq"`
	Epoch  uint64 `json:"epoch,omitempty"`
	Sender string `json:"sender"`
	TS     int64  `json:"ts"`
	Text   string `json:"text"`
}

// PreviewOf is the preview of a sequenced message: the text preview is the
// one the conversation's meta keeps (sequencePreview; sealed again under
// the preview key when the body is sealed), so small and large
// conversations read the same.
func (s *Store) PreviewOf(ctx context.Context, sq *schemas.Sequenced) (Preview, error) {
	m := sq.GetMessage()
	text, err := s.SealedPreviewText(ctx, sq)
	if err != nil {
		return Preview{}, err
	}
	return Preview{Seq: sq.GetSeq(), Epoch: sq.GetEpoch(), Sender: m.GetSender(), TS: sq.GetWriteTimeMs(), Text: text}, nil
}

// ApplyPreviews stores, for every member of each record's conversation, the
// record's preview unless a newer one is stored. Give it the newest
// ordinary message (kind MESSAGE) of each conversation of a batch; the
// others would be overwritten anyway. Large groups are skipped: their
// preview is the conversation's own summary (meta lsender/lts/lprev), read
// at list time, so a message costs no per-member writes.
//
// s holds the conversations and the members' keys; InboxRouter's
// ApplyPreviews writes each member's on the store holding them. A record
// whose conversation's keys or some member's previews can never be read
// or written (a key of the wrong type) fails alone: the error is then
// ItemErrors (indexes of latest), and every other record was applied.
func (s *Store) ApplyPreviews(ctx context.Context, latest []*schemas.Sequenced) error {
	ws, failed, err := s.previewWrites(ctx, latest)
	if err != nil {
		return err
	}
	moved, werr, err := s.writePreviews(ctx, ws)
	for i, e := range werr {
		failed.add(ws[i].rec, e)
	}
	switch {
	case err != nil:
		return err
	case len(moved) > 0:
		return fmt.Errorf("write previews: %w", ErrUserMoved)
	case len(failed) > 0:
		return failed
	}
	return nil
}

// previewWrite is one member's preview of one conversation: the arguments
// of preview_set.lua.
type previewWrite struct {
	user string
	rec  int // the index of its record
	args []any
}

// previewWrites lists the preview each member of latest's conversations
// gets (s holds the conversations), and the records whose conversation
// can never be read for it.
func (s *Store) previewWrites(ctx context.Context, latest []*schemas.Sequenced) ([]previewWrite, ItemErrors, error) {
	failed := ItemErrors{}
	if len(latest) == 0 {
		return nil, failed, nil
	}
	ctx, cancel := context.WithTimeout(ctx, s.cfg.CallTimeout)
	defer cancel()
	targets, err := s.previewTargets(ctx, latest, failed)
	if err != nil {
		return nil, nil, err
	}
	var ws []previewWrite
	for i, sq := range latest {
		if len(targets[i]) == 0 {
			continue
		}
		p, err := s.PreviewOf(ctx, sq)
		if err != nil {
			return nil, nil, err
		}
		js, err := json.Marshal(p)
		if err != nil {
			return nil, nil, fmt.Errorf("encode preview of %s: %w", sq.GetMessage().GetConvId(), err)
		}
		for _, u := range targets[i] {
			ws = append(ws, previewWrite{user: u, rec: i, args: []any{sq.GetMessage().GetConvId(), p.Epoch, p.Seq, js}})
		}
	}
	return ws, failed, nil
}

// writePreviews runs ws in one pipeline on s, which holds their users'
// keys; it returns the indexes of those refused because their user moved
// and the errors of those that can never succeed (indexes of ws).
func (s *Store) writePreviews(ctx context.Context, ws []previewWrite) ([]int, ItemErrors, error) {
	calls := make([]scriptCall, len(ws))
	for i, w := range ws {
		calls[i] = scriptCall{keys: []string{s.keys.Previews(w.user), s.keys.Profile(w.user)}, args: w.args}
	}
	ctx, cancel := context.WithTimeout(ctx, s.cfg.CallTimeout)
	defer cancel()
	cmds, err := s.evalPiped(ctx, previewSetScript, calls)
	if cmds == nil && err != nil {
		return nil, nil, fmt.Errorf("write %d previews: %w", len(ws), err)
	}
	var moved []int
	failed := ItemErrors{}
	for i, c := range cmds {
		switch cerr := AsUserMoved(c.Err()); {
		case cerr == nil:
		case errors.Is(cerr, ErrUserMoved):
			moved = append(moved, i)
		case Permanent(cerr):
			failed.add(i, fmt.Errorf("preview of %s for %s: %w", ws[i].args[0], ws[i].user, cerr))
		default:
			return moved, failed, fmt.Errorf("write %d previews: %w", len(ws), cerr)
		}
	}
	return moved, failed, nil
}

// previewTargets lists, per record, the users whose preview it updates:
// the members who saw the message (joined before it). Large groups get
// none, and so do records whose conversation's keys can never be read:
// their errors go to failed.
func (s *Store) previewTargets(ctx context.Context, latest []*schemas.Sequenced, failed ItemErrors) ([][]string, error) {
	larges := make([]*redis.StringCmd, len(latest))
	mems := make([]*redis.MapStringStringCmd, len(latest))
	// a failed pipeline sets every command's error: they are read below
	_, _ = s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, sq := range latest {
			c := sq.GetMessage().GetConvId()
			larges[i] = p.HGet(ctx, s.keys.ConvMeta(c), MetaLarge)
			mems[i] = p.HGetAll(ctx, s.keys.Members(c))
		}
		return nil
	})
	out := make([][]string, len(latest))
	for i, sq := range latest {
		for _, cerr := range []error{larges[i].Err(), mems[i].Err()} {
			switch {
			case cerr == nil, errors.Is(cerr, redis.Nil):
			case Permanent(cerr):
				failed.add(i, fmt.Errorf("members of %s for its preview: %w", sq.GetMessage().GetConvId(), cerr))
			default:
				return nil, fmt.Errorf("read members for previews: %w", cerr)
			}
		}
		if failed[i] != nil || larges[i].Val() == "1" {
			continue
		}
		seen := map[string]bool{}
		for u, j := range mems[i].Val() {
			if at, err := strconv.ParseUint(j, 10, 64); err == nil && at < sq.GetSeq() {
				seen[u] = true
			}
		}
		// A direct message reaches both participants even before the
		// members hash lists them.
		if sq.GetMessage().GetConvType() == schemas.ConvType_CONV_TYPE_DIRECT {
			seen[sq.GetMessage().GetSender()] = true
			for _, r := range sq.GetMessage().GetRecipients() {
				seen[r] = true
			}
		}
		for u := range seen {
			if schemas.ValidID("user", u) == nil {
				out[i] = append(out[i], u)
			}
		}
		sort.Strings(out[i])
	}
	return out, nil
}
