package main

import (
	"context"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/offlinebox/offlinebox/bench/internal/harness"
	"github.com/offlinebox/offlinebox/bench/internal/naive"
	"github.com/offlinebox/offlinebox/schemas"
)

const naivePrefix = "benchnaive:"

// measureBaseline writes the same messages, in the same order, to the
// VIP's flat inbox (only the VIP's copy: the others' would not change the
// VIP's pull), pulls it as the old client did, and counts what came back.
func (r *runner) measureBaseline(ctx context.Context) error {
	rdb := redis.NewClient(&redis.Options{Addr: r.st.RedisAddr, PoolSize: 8})
	defer rdb.Close()
	flat := naive.NewFlat(rdb, naivePrefix, 1)
	r.log.Printf("baseline: writing the VIP's flat inbox (%d copies)", len(r.sc.msgs))
	if err := flat.Deliver(ctx, r.sc.msgs, func(*schemas.Message) []string { return []string{vip} }); err != nil {
		return err
	}
	srv, err := naive.Serve(flat)
	if err != nil {
		return err
	}
	defer srv.Stop()
	var pulls []time.Duration
	var box *naive.Box
	var size int
	for i := range max(5, r.o.samples/10) {
		t0 := time.Now()
		b, n, err := srv.Pull(ctx, vip, 0)
		if err != nil {
			return err
		}
		pulls = append(pulls, time.Since(t0))
		if i == 0 {
			box, size = b, n
		}
	}
	res := r.res
	res.BaselineFirstResponseBytes, res.BaselineFullCatchupMS = size, harness.Millis(pulls[0])
	res.BaselinePullP99MS = harness.Percentile(pulls, 99)
	r.countBox(box)
	if err := r.baselineMemory(ctx, rdb); err != nil {
		return err
	}
	r.log.Printf("baseline: one box of %d bytes in %.0f ms, %d of %d mentions, %d messages lost",
		size, res.BaselineFullCatchupMS, res.BaselineMentionsInFirstResponse, res.MentionsExpected, res.BaselineLost)
	return nil
}

// countBox counts the mentions and messages the old box delivered.
func (r *runner) countBox(box *naive.Box) {
	res, sc := r.res, r.sc
	got := 0
	for _, c := range box.Conversations {
		for _, m := range c.Messages {
			if sc.mentions[c.ConvID+"/"+m.ClientMsgID] {
				res.BaselineMentionsInFirstResponse++
			}
			if sc.toVIP[c.ConvID][m.ClientMsgID] {
				got++
			}
		}
	}
	res.BaselineMessagesInFirstResponse = got
	// The old client moved its cursor to the end of the box: what the cut
	// dropped is never fetched.
	res.BaselineLost = len(sc.msgs) - got
}

// baselineMemory extrapolates the flat inbox's storage: every recipient
// holds a copy, so the VIP's list, per body byte, times the recipients per
// message (weighted by body size) is what the whole scenario would cost.
func (r *runner) baselineMemory(ctx context.Context, rdb *redis.Client) error {
	n, err := rdb.MemoryUsage(ctx, naivePrefix+"{u:"+vip+"}:flat", 0).Result()
	if err != nil {
		return err
	}
	var copies float64
	for _, m := range r.sc.msgs {
		rec := 1
		if m.GetConvType() == schemas.ConvType_CONV_TYPE_GROUP {
			rec = r.sc.groupSize[m.GetConvId()] - 1
		}
		copies += float64(rec) * float64(len(m.GetBody()))
	}
	perCopy := harness.Ratio(float64(n), float64(r.sc.bodyBytes))
	r.res.BaselineBytesPerBodyByteOneCopy = harness.Round(perCopy, 3)
	r.res.BaselineBytesPerBodyByteExtrapolated = harness.Round(perCopy*copies/float64(r.sc.bodyBytes), 1)
	return nil
}
