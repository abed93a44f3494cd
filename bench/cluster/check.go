package main

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"strings"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2"

	"github.com/offlinebox/offlinebox/bench/checker"
	"github.com/offlinebox/offlinebox/schemas"
	"github.com/offlinebox/offlinebox/topology"
)

// pipelineGroups are the stored path's groups: fanout, convindex (which
// also applies the receipts) and history.
func pipelineGroups() []checker.GroupTopics {
	var gs []checker.GroupTopics
	for _, s := range []topology.Stage{topology.Fanout(), topology.Convindex(), topology.History()} {
		gs = append(gs, checker.GroupTopics{Group: s.Group, Topics: s.Inputs})
	}
	return gs
}

// drain waits until every group committed everything produced so far.
func (s *stack) drain(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()
	return checker.WaitCaughtUp(ctx, s.brokers, pipelineGroups()...)
}

// lagZero measures how long after now the groups take to commit up to
// what the topics held now, while traffic goes on.
func (s *stack) lagZero(ctx context.Context, groups ...checker.GroupTopics) (float64, error) {
	start := time.Now()
	ctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()
	for _, g := range groups {
		for _, t := range g.Topics {
			ends, err := checker.EndOffsets(ctx, s.brokers, t)
			if err != nil {
				return 0, err
			}
			if err := waitCommitted(ctx, s.brokers, g.Group, t, ends); err != nil {
				return 0, err
			}
		}
	}
	return time.Since(start).Seconds(), nil
}

func waitCommitted(ctx context.Context, brokers []string, group, topic string, ends map[int32]int64) error {
	var total int64
	for _, e := range ends {
		total += e
	}
	for {
		committed, _, err := checker.Progress(ctx, brokers, group, topic)
		if err == nil && committed >= total {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s on %s: committed %d of %d: %w", group, topic, committed, total, ctx.Err())
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// verify runs `offlinebox verify` on the cluster, as an operator would.
func (s *stack) verify(ctx context.Context) (bool, string) {
	ctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, s.bin, "verify")
	cmd.Env = append(cmd.Environ(), s.common()...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	return err == nil, strings.TrimSpace(lastLines(out.String(), 5))
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// seqsReused counts the (conversation, epoch, seq) that named two
// messages in im.sequenced or on the devices, and those devices hold that
// im.sequenced never had.
func (s *stack) seqsReused(ctx context.Context, placed map[checker.Place]map[string]bool) (int, error) {
	recs, err := checker.ReadTopic(ctx, s.brokers, schemas.TopicSequenced)
	if err != nil {
		return 0, err
	}
	logged := map[checker.Place]string{}
	reused := map[checker.Place]bool{}
	for _, r := range recs {
		sq, err := schemas.DecodeSequenced(r.Value)
		if err != nil {
			return 0, fmt.Errorf("im.sequenced %d/%d: %w", r.Partition, r.Offset, err)
		}
		p := checker.Place{Conv: sq.GetMessage().GetConvId(), Epoch: sq.GetEpoch(), Seq: sq.GetSeq()}
		id := sq.GetMessage().GetClientMsgId()
		if prev, ok := logged[p]; ok && prev != id {
			reused[p] = true
		} else if !ok {
			logged[p] = id
		}
	}
	for p, ids := range placed {
		if id, ok := logged[p]; !ok || len(ids) > 1 || !ids[id] {
			reused[p] = true
		}
	}
	return len(reused), nil
}

// historyMissing counts the places devices stored that the history (read
// through the Distributed tables, as the readers do) does not hold.
func (s *stack) historyMissing(ctx context.Context, placed map[checker.Place]map[string]bool) (int, error) {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	convSet := map[string]bool{}
	for p := range placed {
		convSet[p.Conv] = true
	}
	convs := make([]string, 0, len(convSet))
	for c := range convSet {
		convs = append(convs, c)
	}
	conn, err := clickhouse.Open(&clickhouse.Options{Addr: strings.Split(s.chAddr, ","), Auth: clickhouse.Auth{Database: s.chDB},
		DialTimeout: 5 * time.Second, ReadTimeout: 30 * time.Second})
	if err != nil {
		return 0, err
	}
	defer conn.Close()
	rows, err := conn.Query(ctx, "SELECT DISTINCT conv_id, epoch, seq FROM history WHERE has(?, conv_id)", convs)
	if err != nil {
		return 0, fmt.Errorf("read history: %w", err)
	}
	defer rows.Close()
	held := map[checker.Place]bool{}
	for rows.Next() {
		var p checker.Place
		if err := rows.Scan(&p.Conv, &p.Epoch, &p.Seq); err != nil {
			return 0, fmt.Errorf("read history: %w", err)
		}
		held[p] = true
	}
	if err := rows.Err(); err != nil {
		return 0, fmt.Errorf("read history: %w", err)
	}
	missing := 0
	for p := range placed {
		if !held[p] {
			missing++
		}
	}
	return missing, nil
}
