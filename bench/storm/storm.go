package main

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/offlinebox/offlinebox/api"
	"github.com/offlinebox/offlinebox/bench/internal/harness"
	"github.com/offlinebox/offlinebox/client"
	"github.com/offlinebox/offlinebox/redisstore"
	"github.com/offlinebox/offlinebox/schemas"
	"github.com/offlinebox/offlinebox/workers/fanout"
)

type storm struct {
	f     *harness.Flags
	o     options
	st    *harness.Stack
	log   *harness.Log
	users int
	res   *result

	producer *kgo.Client
	fanout   *harness.Fanout
	api      *apiServer
	// base is the baseline's API server (nil without -baseline).
	base *apiServer
	http *http.Client
	// mentions holds each user's pending mentions by client_msg_id: a
	// user who wrote in the conversation after being mentioned has read it
	// (sending marks read).
	mentions map[string]map[string]bool
}

func userID(i int) string { return fmt.Sprintf("su%04d", i) }

func (s *storm) stop() {
	if s.api != nil {
		s.api.Stop()
	}
	if s.base != nil {
		s.base.Stop()
	}
	if s.fanout != nil {
		s.fanout.Stop()
	}
	if s.producer != nil {
		s.producer.Close()
	}
}

// seed puts every user in o.groups groups and sends enough messages that
// each has at least o.pending from others, through Kafka and the fanout.
func (s *storm) seed(ctx context.Context) error {
	msgs := s.workload()
	var err error
	if s.producer, err = harness.NewProducer(s.st); err != nil {
		return err
	}
	if s.fanout, err = harness.StartFanout(s.st, fanout.Config{Store: redisstore.Config{Prefix: s.f.Prefix}}); err != nil {
		return err
	}
	s.log.Printf("seeding: %d users in %d groups, %d records", s.users, s.o.groups, len(msgs))
	start := time.Now()
	if err := harness.Produce(ctx, s.producer, msgs); err != nil {
		return err
	}
	if err := s.fanout.WaitHandled(ctx, int64(len(msgs)), "seed", s.log); err != nil {
		return err
	}
	s.res.SeedMS = harness.Millis(time.Since(start))
	s.log.Printf("seeded in %s", time.Since(start).Round(time.Millisecond))
	s.res.APIMaxInFlight = api.DefaultMaxInFlight
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	if s.api, err = startServer(ctx, exe, s.st.RedisAddr, s.st.Brokers, s.f.Prefix, s.o.cpuprofile, s.o.memprofile); err != nil {
		return err
	}
	if s.o.baseline != "" {
		if s.base, err = startServer(ctx, s.o.baseline, s.st.RedisAddr, s.st.Brokers, s.f.Prefix, "", ""); err != nil {
			return fmt.Errorf("baseline: %w", err)
		}
	}
	s.http = &http.Client{Timeout: 2 * time.Minute, Transport: &http.Transport{MaxIdleConnsPerHost: 4096, MaxIdleConns: 4096}}
	return nil
}

// workload is the join records and the messages, round robin over groups.
func (s *storm) workload() []*schemas.Message {
	b := harness.NewBodies(s.f.Seed)
	pending := map[string]map[string][]string{} // conv → user → client_msg_ids of pending mentions
	all := make([]string, s.users)
	for i := range all {
		all[i] = userID(i)
	}
	var msgs []*schemas.Message
	for g := range s.o.groups {
		conv := fmt.Sprintf("sg%02d", g)
		for start := 0; start < len(all); start += 1000 {
			part := all[start:min(start+1000, len(all))]
			msgs = append(msgs, &schemas.Message{ClientMsgId: b.UUID(), ConvId: conv, ConvType: schemas.ConvType_CONV_TYPE_GROUP,
				Kind: schemas.Kind_KIND_MEMBER_JOIN, Sender: all[0], Recipients: part}) // the owner adds the rest
		}
	}
	// Own messages are not pending: send enough that others' reach o.pending.
	perGroup := int(float64(s.o.pending)/float64(s.o.groups)/(1-1/float64(s.users))) + 1
	s.res.PendingPerUser, s.res.Conversations = s.o.pending, s.o.groups
	for range perGroup {
		for g := range s.o.groups {
			conv := fmt.Sprintf("sg%02d", g)
			if pending[conv] == nil {
				pending[conv] = map[string][]string{}
			}
			m := &schemas.Message{ClientMsgId: b.UUID(), ConvId: conv,
				ConvType: schemas.ConvType_CONV_TYPE_GROUP, Kind: schemas.Kind_KIND_MESSAGE,
				Sender: all[b.Intn(len(all))], ContentType: "text/plain", Body: b.Next()}
			if b.Intn(100) == 0 {
				if u := all[b.Intn(len(all))]; u != m.Sender {
					m.Mentions = []string{u}
					pending[conv][u] = append(pending[conv][u], m.ClientMsgId)
				}
			}
			delete(pending[conv], m.Sender)
			msgs = append(msgs, m)
		}
	}
	s.mentions = map[string]map[string]bool{}
	for _, byUser := range pending {
		for u, ids := range byUser {
			if s.mentions[u] == nil {
				s.mentions[u] = map[string]bool{}
			}
			for _, id := range ids {
				s.mentions[u][id] = true
			}
		}
	}
	s.res.SeedMessages = perGroup * s.o.groups
	return msgs
}

// outcome is one user's reconnect.
type outcome struct {
	took            time.Duration
	err             error
	retries         int
	firstBytes      int
	mentionsMissing int
}

// level has n users reconnect at once to srv on fresh devices.
func (s *storm) level(ctx context.Context, srv *apiServer, n int, device string) (level, error) {
	clients := make([]*client.Client, n)
	for i := range clients {
		tok, err := srv.Token(userID(i), device)
		if err != nil {
			return level{}, err
		}
		clients[i] = client.New(srv.URL, tok, s.http)
	}
	s.log.Printf("%d users reconnect at once (%s)", n, device)
	outs := make([]outcome, n)
	gate := make(chan struct{})
	var wg sync.WaitGroup
	for i := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-gate
			outs[i] = s.reconnect(ctx, clients[i], userID(i))
		}()
	}
	before, err := s.costs(ctx, srv)
	if err != nil {
		return level{}, err
	}
	start := time.Now()
	close(gate)
	wg.Wait()
	wall := time.Since(start)
	lv := summarise(n, outs, wall)
	after, err := s.costs(ctx, srv)
	if err != nil {
		return level{}, err
	}
	// Per completed reconnect: the work of one that failed is spent for
	// nothing, and counts against those that made it.
	per := func(d float64) float64 { return d / float64(max(1, n-lv.Errors)) }
	lv.RedisBytesOutPerReconnect = harness.Round(per(float64(after.redisOut-before.redisOut)), 0)
	lv.ServerCPUMSPerReconnect = harness.Round(per(harness.Millis(after.serverCPU-before.serverCPU)), 2)
	lv.RedisReadsPerReconnect = harness.Round(per(float64(after.redisReads-before.redisReads)), 1)
	lv.ClientCPUMSPerReconnect = harness.Round(per(harness.Millis(after.clientCPU-before.clientCPU)), 2)
	lv.RedisCPUMSPerReconnect = harness.Round(per((after.redisCPU-before.redisCPU)*1000), 2)
	lv.RedisCalls = map[string]redisCalls{}
	for cmd, a := range after.commands {
		b := before.commands[cmd]
		if a.Calls == b.Calls {
			continue
		}
		lv.RedisCalls[cmd] = redisCalls{Calls: harness.Round(per(float64(a.Calls-b.Calls)), 2),
			MS: harness.Round(per(float64(a.Usec-b.Usec)/1000), 3)}
	}
	s.log.Printf("%d users: p50 %.0f ms, p99 %.0f ms, %d errors, %d retries after 503, %.1f catch-ups/s, "+
		"server CPU %.2f ms and Redis CPU %.2f ms per reconnect",
		n, lv.P50MS, lv.P99MS, lv.Errors, lv.Retries503, lv.CatchupsPerSec, lv.ServerCPUMSPerReconnect, lv.RedisCPUMSPerReconnect)
	return lv, nil
}

// costs is what the servers have spent so far: the API process's CPU,
// Redis's CPU, bytes sent and calls per command.
type costs struct {
	serverCPU time.Duration
	clientCPU time.Duration
	redisCPU  float64 // seconds
	redisOut  int64
	// redisReads counts the reads Redis's event loop served: a pipeline
	// or a lone command that arrives in one piece is one, so it is the
	// round trips Redis answered.
	redisReads int64
	commands   map[string]harness.CommandStat
}

func (s *storm) costs(ctx context.Context, srv *apiServer) (costs, error) {
	var c costs
	var err error
	if c.serverCPU, err = srv.CPU(); err != nil {
		return c, err
	}
	if c.clientCPU, err = harness.ProcessCPU(os.Getpid()); err != nil {
		return c, err
	}
	info, err := s.st.Redis.Info(ctx, "stats", "cpu", "commandstats").Result()
	if err != nil {
		return c, fmt.Errorf("redis info: %w", err)
	}
	c.commands = map[string]harness.CommandStat{}
	var seen int
	for _, line := range strings.Split(info, "\r\n") {
		k, v, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		switch {
		case k == "total_net_output_bytes":
			c.redisOut, err = strconv.ParseInt(v, 10, 64)
			seen++
		case k == "total_reads_processed":
			c.redisReads, err = strconv.ParseInt(v, 10, 64)
		case k == "used_cpu_user" || k == "used_cpu_sys":
			var f float64
			f, err = strconv.ParseFloat(v, 64)
			c.redisCPU += f
			seen++
		default:
			if name, st, ok := harness.ParseCommandStat(line); ok {
				c.commands[name] = st
			}
		}
		if err != nil {
			return c, fmt.Errorf("redis info %s: %w", k, err)
		}
	}
	if seen != 3 {
		return c, fmt.Errorf("redis info: no total_net_output_bytes, used_cpu_user or used_cpu_sys")
	}
	return c, nil
}

func summarise(n int, outs []outcome, wall time.Duration) level {
	lv := level{Users: n, WallMS: harness.Millis(wall)}
	var took []time.Duration
	var bytes, ok int
	for _, o := range outs {
		lv.Retries503 += o.retries
		if o.err != nil {
			lv.Errors++
			continue
		}
		ok++
		took = append(took, o.took)
		bytes += o.firstBytes
		lv.MentionsMissing += o.mentionsMissing
	}
	lv.P50MS, lv.P99MS, lv.MaxMS = harness.Percentile(took, 50), harness.Percentile(took, 99), harness.Percentile(took, 100)
	lv.CatchupsPerSec = harness.Round(float64(ok)/wall.Seconds(), 1)
	lv.FirstBytesAvg = harness.Round(harness.Ratio(float64(bytes), float64(ok)), 0)
	return lv
}

// reconnect is one user's list, first sync and ack, each retried after a
// 503 as a client would.
func (s *storm) reconnect(ctx context.Context, c *client.Client, user string) outcome {
	var o outcome
	start := time.Now()
	var resp client.SyncResponse
	steps := []func() error{
		func() error { _, _, err := c.Conversations(ctx, 50); return err },
		func() error {
			var err error
			resp, o.firstBytes, err = c.Sync(ctx, client.SyncRequest{})
			return err
		},
		func() error { return c.Ack(ctx, client.NewHeld().Apply(resp)) },
	}
	for _, step := range steps {
		if o.err = s.retry(ctx, step, &o.retries); o.err != nil {
			return o
		}
	}
	o.took = time.Since(start)
	o.mentionsMissing = len(s.mentions[user]) - len(firstMentions(resp, s.mentions[user]))
	return o
}

// firstMentions is which of the pending mentions an answer carries: in
// the mention lane, or in a conversation's slice (the lane leaves out
// what the slices carry).
func firstMentions(resp client.SyncResponse, pending map[string]bool) map[string]bool {
	found := map[string]bool{}
	for _, m := range resp.Mentions {
		if pending[m.Message.ClientMsgID] {
			found[m.Message.ClientMsgID] = true
		}
	}
	for _, c := range resp.Conversations {
		for _, m := range c.Messages {
			if pending[m.ClientMsgID] {
				found[m.ClientMsgID] = true
			}
		}
	}
	return found
}

func (s *storm) retry(ctx context.Context, step func() error, retries *int) error {
	for attempt := 0; ; attempt++ {
		err := step()
		var se *client.StatusError
		if err == nil || !errors.As(err, &se) || se.Status != http.StatusServiceUnavailable || attempt == s.o.retries {
			return err
		}
		*retries++
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Second):
		}
	}
}
