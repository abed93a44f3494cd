package main

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/offlinebox/offlinebox/bench/internal/harness"
	"github.com/offlinebox/offlinebox/client"
	"github.com/offlinebox/offlinebox/redisstore"
	"github.com/offlinebox/offlinebox/seal"
	"github.com/offlinebox/offlinebox/workers/fanout"
)

// device is the VIP's device that was caught up before the trip.
const device = "phone"

// runner holds one run's stages and results.
type runner struct {
	f   *harness.Flags
	o   options
	st  *harness.Stack
	log *harness.Log
	sc  *scenario
	res *result

	producer *kgo.Client
	fanout   *harness.Fanout
	api      *harness.API
	client   *client.Client
	held     *client.Held
	sealer   *seal.Sealer // nil: bodies in the clear
}

// newBenchSealer seals with a fresh in-memory master key, the data keys
// kept in the stack's Redis under prefix.
func newBenchSealer(ctx context.Context, st *harness.Stack, prefix string) (*seal.Sealer, error) {
	k, err := seal.GenerateMasterKey("bench")
	if err != nil {
		return nil, err
	}
	ring, err := seal.NewFileRing([]seal.MasterKey{k})
	if err != nil {
		return nil, err
	}
	keys, err := redisstore.New(st.Redis, redisstore.Config{Prefix: prefix})
	if err != nil {
		return nil, err
	}
	if err := seal.Check(ctx, ring, keys); err != nil {
		return nil, err
	}
	return seal.NewSealer(ring, keys, 0), nil
}

func (r *runner) stop() {
	if r.api != nil {
		r.api.Stop()
	}
	if r.fanout != nil {
		r.fanout.Stop()
	}
	if r.producer != nil {
		r.producer.Close()
	}
}

// seed creates the groups, lets the VIP's device catch up on them (it was
// up to date when the trip began), then sends the 5 days of messages and
// waits until the fanout worker has handled every one.
func (r *runner) seed(ctx context.Context) error {
	var err error
	if r.producer, err = harness.NewProducer(r.st); err != nil {
		return err
	}
	sc := redisstore.Config{Prefix: r.f.Prefix}
	opt := harness.APIOptions{Prefix: r.f.Prefix}
	if r.sealer != nil {
		sc.Sealer, opt.Opener = r.sealer, r.sealer
	}
	if r.fanout, err = harness.StartFanout(r.st, fanout.Config{Store: sc}); err != nil {
		return err
	}
	if r.api, err = harness.StartAPI(r.st, opt); err != nil {
		return err
	}
	tok, err := r.api.Token(vip, device)
	if err != nil {
		return err
	}
	r.client = client.New(r.api.URL, tok, nil)
	if err := harness.Produce(ctx, r.producer, r.sc.joins); err != nil {
		return err
	}
	if err := r.fanout.WaitHandled(ctx, int64(len(r.sc.joins)), "memberships", r.log); err != nil {
		return err
	}
	r.held = client.NewHeld()
	if _, err := r.client.CatchUp(ctx, r.held, client.CatchUpOptions{}); err != nil {
		return fmt.Errorf("catch up before the trip: %w", err)
	}
	r.log.Printf("memberships done (%d join records); the VIP's %s is up to date; sending the 5 days", len(r.sc.joins), device)
	start := time.Now()
	if err := harness.Produce(ctx, r.producer, r.sc.msgs); err != nil {
		return err
	}
	produced := time.Since(start)
	if err := r.fanout.WaitHandled(ctx, int64(len(r.sc.joins)+len(r.sc.msgs)), "messages", r.log); err != nil {
		return err
	}
	r.res.PipelineDrainMS = harness.Millis(time.Since(start))
	r.log.Printf("pipeline drained: %d messages in %s (producing took %s), %d failed Handle calls retried",
		len(r.sc.msgs), time.Since(start).Round(time.Millisecond), produced.Round(time.Millisecond), r.fanout.Failed())
	return nil
}

// measureOurs times the conversation list and the first sync (both read
// only, repeated), then the full catch-up, and checks what the device got.
func (r *runner) measureOurs(ctx context.Context) error {
	var list, first []time.Duration
	for range r.o.samples {
		t0 := time.Now()
		if _, _, err := r.client.Conversations(ctx, 50); err != nil {
			return err
		}
		list = append(list, time.Since(t0))
	}
	cursors := r.held.Cursors()
	for range r.o.samples {
		t0 := time.Now()
		if _, _, err := r.client.Sync(ctx, client.SyncRequest{Cursors: cursors}); err != nil {
			return err
		}
		first = append(first, time.Since(t0))
	}
	r.log.Printf("conversation list p99 %.1f ms, first sync p99 %.1f ms (%d samples each)",
		harness.Percentile(list, 99), harness.Percentile(first, 99), r.o.samples)
	stats, err := r.client.CatchUp(ctx, r.held, client.CatchUpOptions{})
	if err != nil {
		return fmt.Errorf("catch-up: %w", err)
	}
	r.log.Printf("caught up in %s: %d syncs, %d gap pages, %d bytes", stats.Duration.Round(time.Millisecond),
		stats.SyncResponses, stats.PageResponses, stats.TotalBytes)
	res := r.res
	res.ConvListP50MS, res.ConvListP99MS = harness.Percentile(list, 50), harness.Percentile(list, 99)
	res.FirstSyncP50MS, res.FirstSyncP99MS = harness.Percentile(first, 50), harness.Percentile(first, 99)
	res.Responses, res.PageResponses = stats.SyncResponses, stats.PageResponses
	res.FirstResponseBytes, res.MaxResponseBytes = stats.FirstBytes, stats.MaxBytes
	res.FullCatchupMS, res.FullCatchupBytes = harness.Millis(stats.Duration), stats.TotalBytes
	res.FullCatchupDecodedBytes, res.FirstResponseDecodedSize = stats.DecodedBytes, stats.FirstDecodedBytes
	res.FullCatchupPerBodyByte = harness.Round(harness.Ratio(float64(stats.TotalBytes), float64(r.sc.bodyBytes)), 3)
	res.IncompleteRanges, res.Redelivered = stats.Incomplete, r.held.Redelivered
	r.check(stats.First)
	return nil
}

// check compares what the device holds with what was sent to the VIP.
func (r *runner) check(first client.SyncResponse) {
	res, sc := r.res, r.sc
	res.Messages, res.MentionsExpected, res.DirectExpected = len(sc.msgs), len(sc.mentions), sc.direct
	for _, m := range first.Mentions {
		if sc.mentions[m.ConvID+"/"+m.Message.ClientMsgID] {
			res.MentionsInFirstResponse++
		}
	}
	for _, c := range first.Conversations {
		for _, m := range c.Messages {
			if strings.HasPrefix(c.ConvID, "d") && sc.toVIP[c.ConvID][m.ClientMsgID] {
				res.DirectInFirstResponse++
			}
		}
	}
	for conv, want := range sc.toVIP {
		seqsOf := map[string]int{}
		if hc := r.held.Convs[conv]; hc != nil {
			for _, m := range hc.Msgs {
				seqsOf[m.ClientMsgID]++
			}
		}
		for cmid := range want {
			switch n := seqsOf[cmid]; {
			case n == 0:
				res.Lost++
			case n > 1:
				res.Duplicates += n - 1
			}
		}
	}
}

// measureMemory sizes every key of the scenario by kind.
func (r *runner) measureMemory(ctx context.Context) error {
	c, err := harness.MemoryCensus(ctx, r.st.Redis, r.f.Prefix, nil)
	if err != nil {
		return err
	}
	res := r.res
	res.Memory, res.RedisBytes, res.BodyBytes = c, c.Bytes, r.sc.bodyBytes
	res.RedisBytesPerBodyByte = harness.Round(harness.Ratio(float64(c.Bytes), float64(r.sc.bodyBytes)), 3)
	var conv int64
	for _, k := range c.Kinds {
		if strings.HasPrefix(k.Kind, "{c}") {
			conv += k.Bytes
		}
	}
	res.ConvBytesPerBodyByte = harness.Round(harness.Ratio(float64(conv), float64(r.sc.bodyBytes)), 3)
	r.log.Printf("memory: %d keys, %d bytes, %.2f bytes per body byte (conversation keys alone %.2f)",
		c.Keys, c.Bytes, res.RedisBytesPerBodyByte, res.ConvBytesPerBodyByte)
	if res.Anatomy, err = r.measureAnatomy(ctx, c); err != nil {
		return err
	}
	r.log.Printf("anatomy: %+v", *res.Anatomy)
	for _, k := range c.Kinds {
		r.log.Printf("  %-10s %7d keys %11d bytes %6.3f per body byte %v", k.Kind, k.Keys, k.Bytes,
			float64(k.Bytes)/float64(r.sc.bodyBytes), k.Encodings)
	}
	return nil
}
