package redisstore

import (
	"context"
	_ "embed"
	"fmt"

	"github.com/redis/go-redis/v9"
)

var (
	//go:embed lua/push_publish.lua
	pushPublishLua    string
	pushPublishScript = redis.NewScript(pushPublishLua)
)

// Status codes of push_publish.lua.
const (
	pushStatusPublished = 1
	pushStatusChanged   = 0
)

// ChannelBatch is a batch for a conversation's live channel
// (Keys.ConvChannel), resolved for the conversation as Audience.
type ChannelBatch struct {
	Conv     string
	Audience PushAudience
	Data     []byte
}

// PublishUnchanged publishes each batch on its conversation's channel,
// all in one pipeline, each only while the conversation is still as its
// Audience says (the large flag and the membership version, checked in
// the same step as the publish). It reports which batches were published;
// the others published nothing: their conversation changed since it was
// read. sharded chooses SPUBLISH over PUBLISH. A batch whose
// conversation's meta can never be read (a key of the wrong type) is not
// published, and the error is then ItemErrors naming it by its index in
// batches, beside the others' answers.
func (s *Store) PublishUnchanged(ctx context.Context, sharded bool, batches []ChannelBatch) ([]bool, error) {
	if len(batches) == 0 {
		return nil, nil
	}
	ctx, cancel := context.WithTimeout(ctx, s.cfg.CallTimeout)
	defer cancel()
	calls := make([]scriptCall, len(batches))
	for i, b := range batches {
		calls[i] = scriptCall{keys: []string{s.keys.ConvMeta(b.Conv)},
			args: []any{s.keys.ConvChannel(b.Conv), b.Audience.Version, flag(b.Audience.Large), flag(sharded), b.Data}}
	}
	cmds, err := s.evalPiped(ctx, pushPublishScript, calls)
	if cmds == nil && err != nil {
		return nil, fmt.Errorf("publish on %d conversation channels: %w", len(batches), err)
	}
	out := make([]bool, len(batches))
	err = itemFailures(len(cmds), func(i int) error {
		out[i] = cmds[i].Err() == nil && readReplyUint(cmds[i].Val()) == pushStatusPublished
		return cmds[i].Err()
	}, nil, func(i int) string { return "publish on the channel of " + batches[i].Conv })
	return out, err
}

func flag(b bool) int {
	if b {
		return 1
	}
	return 0
}
