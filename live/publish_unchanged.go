package live

import (
	"context"
	_ "embed"
	"fmt"

	"github.com/redis/go-redis/v9"

	"github.com/offlinebox/offlinebox/redisstore"
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
	Audience redisstore.PushAudience
	Batch    Batch
}

// PublishUnchanged publishes each batch on its conversation's channel
// (named by keys), all in one pipeline, each only while the conversation
// is still as its Audience says (the large flag and the membership
// version, checked in the same step as the publish). It reports which
// batches were published; the others published nothing: their
// conversation changed since it was read. A batch whose conversation's
// meta can never be read (a key of the wrong type) is not published, and
// the error is then redisstore.ItemErrors naming it by its index in
// batches, beside the others' answers.
func (b *Bus) PublishUnchanged(ctx context.Context, keys redisstore.Keys, batches []ChannelBatch) ([]bool, error) {
	if len(batches) == 0 {
		return nil, nil
	}
	data := make([][]byte, len(batches))
	for i := range batches {
		d, err := b.format.Encode(batches[i].Batch)
		if err != nil {
			return nil, fmt.Errorf("publish on the channel of %s: %w", batches[i].Conv, err)
		}
		data[i] = d
	}
	sharded := b.Sharded(ctx)
	ctx, cancel := context.WithTimeout(ctx, b.timeout)
	defer cancel()
	cmds, err := b.evalPublish(ctx, keys, sharded, batches, data)
	if err != nil {
		return nil, fmt.Errorf("publish on %d conversation channels: %w", len(batches), err)
	}
	out := make([]bool, len(batches))
	failed := redisstore.ItemErrors{}
	var wait error
	for i, c := range cmds {
		err := c.Err()
		switch {
		case err == nil:
			n, _ := c.Int64()
			out[i] = n == pushStatusPublished
		case redisstore.Permanent(err):
			failed[i] = fmt.Errorf("publish on the channel of %s: %w", batches[i].Conv, err)
		case wait == nil:
			wait = fmt.Errorf("publish on the channel of %s: %w", batches[i].Conv, err)
		}
	}
	if wait != nil {
		return out, wait
	}
	if len(failed) > 0 {
		return out, failed
	}
	return out, nil
}

// evalPublish runs the script once per batch in one pipeline, loading it
// and sending again those a server did not hold (NOSCRIPT: a restart, a
// failover, a new node); data holds each batch encoded. Its error is only that of the pipeline as a
// whole; each call's own is on its command.
func (b *Bus) evalPublish(ctx context.Context, keys redisstore.Keys, sharded bool, batches []ChannelBatch, data [][]byte) ([]*redis.Cmd, error) {
	run := func(at []int) []*redis.Cmd {
		cmds := make([]*redis.Cmd, len(at))
		_, _ = b.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
			for k, i := range at {
				bt := batches[i]
				cmds[k] = pushPublishScript.EvalSha(ctx, p, []string{keys.ConvMeta(bt.Conv)},
					keys.ConvChannel(bt.Conv), bt.Audience.Version, flag(bt.Audience.Large), flag(sharded), data[i])
			}
			return nil
		})
		return cmds
	}
	all := make([]int, len(batches))
	for i := range all {
		all[i] = i
	}
	cmds := run(all)
	var lost []int
	for i, c := range cmds {
		if isNoScript(c.Err()) {
			lost = append(lost, i)
		}
	}
	if len(lost) == 0 {
		return cmds, nil
	}
	if err := pushPublishScript.Load(ctx, b.rdb).Err(); err != nil {
		return nil, fmt.Errorf("load push_publish.lua: %w", err)
	}
	for k, c := range run(lost) {
		cmds[lost[k]] = c
	}
	return cmds, nil
}

func isNoScript(err error) bool { return err != nil && redis.HasErrorPrefix(err, "NOSCRIPT") }

func flag(b bool) int {
	if b {
		return 1
	}
	return 0
}
