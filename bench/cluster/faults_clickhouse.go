package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"sort"
	"strings"
	"time"

	"github.com/offlinebox/offlinebox/bench/checker"
)

// chDownFor is how long clickhouseShardDown keeps a shard down.
const chDownFor = time.Minute

// historyProbes bounds the conversations read while a shard is down.
const historyProbes = 4

// memberPairs lists (user, conversation) pairs of a workload's API sends:
// the user sends there, so is a member and may read its history.
func memberPairs(w *checker.Workload) [][2]string {
	users := make([]string, 0, len(w.API))
	for u := range w.API {
		users = append(users, u)
	}
	sort.Strings(users)
	var out [][2]string
	for _, u := range users {
		if msgs := w.API[u]; len(msgs) > 0 && len(out) < historyProbes {
			out = append(out, [2]string{u, msgs[0].GetConvId()})
		}
	}
	return out
}

// clickhouseShardDown kills the last history shard (-9) under load and
// keeps it down for chDownFor, reading history through the balancer all
// the while: every answer must be a page or a 503 history_unavailable,
// never another 5xx or no answer. The shard then starts again with its
// data; the round's lag check waits for the sink to catch up and verify
// compares the history with Redis.
func clickhouseShardDown(ctx context.Context, s *stack) (string, error) {
	if len(s.chShards) < 2 || len(s.members) == 0 {
		return "", fmt.Errorf("needs two shards and a member to read as (%d shards, %d members)", len(s.chShards), len(s.members))
	}
	shard := s.chShards[len(s.chShards)-1]
	if err := shard.Kill(); err != nil {
		return "", err
	}
	tally := map[string]int{}
	hc := &http.Client{Timeout: 15 * time.Second}
	for start := time.Now(); time.Since(start) < chDownFor && ctx.Err() == nil; time.Sleep(2 * time.Second) {
		for _, m := range s.members {
			tally[s.historyAnswer(ctx, hc, m[0], m[1])]++
		}
	}
	if err := shard.Restart(ctx); err != nil {
		return "", fmt.Errorf("restart shard %s: %w", shard.Addr(), err)
	}
	keys := make([]string, 0, len(tally))
	for k, n := range tally {
		keys = append(keys, fmt.Sprintf("%s ×%d", k, n))
	}
	sort.Strings(keys)
	action := fmt.Sprintf("killed ClickHouse shard %s (-9) for %s; history reads through the balancer meanwhile: %s; the shard started again with its data",
		shard.Addr(), chDownFor, strings.Join(keys, ", "))
	for k := range tally {
		if k != "200" && k != "503 history_unavailable" {
			return action, fmt.Errorf("a history read while a shard was down answered %s", k)
		}
	}
	if tally["503 history_unavailable"] == 0 {
		return action, fmt.Errorf("no history read saw the shard down")
	}
	return action, nil
}

// historyAnswer reads one page of conv's history as user and says what
// came back: the status, with the error code of a 5xx.
func (s *stack) historyAnswer(ctx context.Context, hc *http.Client, user, conv string) string {
	tok, err := s.keyring.Mint(user, "history-probe", time.Hour)
	if err != nil {
		return "token: " + err.Error()
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.lbURL+"/v1/conversations/"+url.PathEscape(conv)+"/history?limit=20", nil)
	if err != nil {
		return "request: " + err.Error()
	}
	req.Header.Set("Authorization", "Bearer "+tok)
	resp, err := hc.Do(req)
	if err != nil {
		return "no answer"
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if resp.StatusCode < 500 {
		return fmt.Sprint(resp.StatusCode)
	}
	var e struct {
		Error struct {
			Code string `json:"code"`
		} `json:"error"`
	}
	_ = json.Unmarshal(body, &e)
	return fmt.Sprintf("%d %s", resp.StatusCode, e.Error.Code)
}
