package main

import (
	"encoding/json"
	"fmt"
	"os"

	"github.com/offlinebox/offlinebox/bench/internal/harness"
)

// Targets of the founding documents (and of the issue that set this
// benchmark).
const (
	targetMaxResponseBytes = 150000
	targetFirstSyncP99MS   = 200
	targetConvListP99MS    = 20
	targetBytesPerBodyByte = 2
	// targetCatchupPerBodyByte and targetResponses: the full catch-up
	// moves no more bytes on the wire than the bodies hold, in at most 60
	// answers.
	targetCatchupPerBodyByte = 1.0
	targetResponses          = 60
)

type result struct {
	harness.Header

	Messages                int     `json:"messages"`
	MentionsExpected        int     `json:"mentions_expected"`
	MentionsInFirstResponse int     `json:"mentions_in_first_response"`
	DirectExpected          int     `json:"direct_expected"`
	DirectInFirstResponse   int     `json:"direct_in_first_response"`
	Lost                    int     `json:"lost"`
	Duplicates              int     `json:"duplicates"`
	Redelivered             int     `json:"redelivered"`
	IncompleteRanges        int     `json:"incomplete_ranges"`
	FirstResponseBytes      int     `json:"first_response_bytes"`
	MaxResponseBytes        int     `json:"max_response_bytes"`
	Responses               int     `json:"responses"`
	PageResponses           int     `json:"page_responses"`
	ConvListP50MS           float64 `json:"conv_list_p50_ms"`
	ConvListP99MS           float64 `json:"conv_list_p99_ms"`
	FirstSyncP50MS          float64 `json:"first_sync_p50_ms"`
	FirstSyncP99MS          float64 `json:"first_sync_p99_ms"`
	FullCatchupMS           float64 `json:"full_catchup_ms"`
	FullCatchupBytes        int64   `json:"full_catchup_bytes"`
	// FullCatchupBytes is on the wire; FullCatchupDecodedBytes the same
	// answers' JSON, as the budgets count it.
	FullCatchupDecodedBytes         int64   `json:"full_catchup_decoded_bytes"`
	FullCatchupPerBodyByte          float64 `json:"full_catchup_bytes_per_body_byte"`
	FirstResponseDecodedSize        int     `json:"first_response_decoded_bytes"`
	PipelineDrainMS                 float64 `json:"pipeline_drain_ms"`
	BodyBytes                       int64   `json:"body_bytes"`
	RedisBytes                      int64   `json:"redis_bytes"`
	RedisBytesPerBodyByte           float64 `json:"redis_bytes_per_body_byte"`
	ConvBytesPerBodyByte            float64 `json:"redis_bytes_per_body_byte_conversation_keys"`
	BaselineMentionsInFirstResponse int     `json:"baseline_mentions_in_first_response"`
	BaselineFirstResponseBytes      int     `json:"baseline_first_response_bytes"`
	BaselineFullCatchupMS           float64 `json:"baseline_full_catchup_ms"`
	BaselinePullP99MS               float64 `json:"baseline_pull_p99_ms"`
	BaselineMessagesInFirstResponse int     `json:"baseline_messages_in_first_response"`
	BaselineLost                    int     `json:"baseline_lost"`
	// The flat list per body byte for one copy, and extrapolated to a copy
	// per recipient as the flat design stores it.
	BaselineBytesPerBodyByteOneCopy      float64 `json:"baseline_redis_bytes_per_body_byte_one_copy"`
	BaselineBytesPerBodyByteExtrapolated float64 `json:"baseline_redis_bytes_per_body_byte_extrapolated"`

	// Sealed: bodies were sealed at rest in this run; Sealing compares it
	// with a run in the clear (-seal both).
	Sealed  bool         `json:"sealed"`
	Sealing *sealingCost `json:"sealing_cost,omitempty"`

	// Before: the catch-up of an earlier result (--before), to compare.
	Before *before `json:"before,omitempty"`

	Memory   harness.Census  `json:"memory"`
	Anatomy  *anatomy        `json:"memory_anatomy"`
	Targets  map[string]bool `json:"targets_met"`
	Embedded []string        `json:"embedded"`
	Table    []harness.Row   `json:"table"`
	Notes    []string        `json:"notes"`
}

// finish decides the targets and writes the notes.
func (r *result) finish() {
	r.Targets = map[string]bool{
		"lost_0":                        r.Lost == 0,
		"duplicates_0":                  r.Duplicates == 0,
		"all_mentions_first":            r.MentionsInFirstResponse == r.MentionsExpected,
		"max_response_bytes_150000":     r.MaxResponseBytes <= targetMaxResponseBytes,
		"first_sync_p99_200ms":          r.FirstSyncP99MS <= targetFirstSyncP99MS,
		"conv_list_p99_20ms":            r.ConvListP99MS <= targetConvListP99MS,
		"redis_bytes_per_body_byte_2":   r.RedisBytesPerBodyByte <= targetBytesPerBodyByte,
		"catchup_bytes_per_body_byte_1": r.FullCatchupPerBodyByte <= targetCatchupPerBodyByte,
		"responses_60":                  r.Responses+r.PageResponses <= targetResponses,
		"baseline_loses_mentions":       r.BaselineMentionsInFirstResponse < r.MentionsExpected,
	}
	r.Notes = []string{
		"the device was up to date before the 5 days; it catches up with POST /v1/sync (API defaults: 200 per " +
			"conversation, 128 KiB budget), acks each answer, syncs again until nothing is new, then pages every gap " +
			"and rebased backlog with GET /v1/conversations/{conv}/messages, each page bounded by its byte budget " +
			"(max_bytes, up to 5000 messages: 128 KiB on the wire times the decoded bytes per wire byte seen so far), " +
			"all with Accept-Encoding: zstd, gzip",
		"bytes are on the wire (zstd, fastest level, as the server negotiated it) unless said decoded; the budgets " +
			"count decoded JSON; messages inside a conversation slice leave out conv_id, epoch and conv_type, and " +
			"text bodies are JSON strings",
		"lost: messages sent to the VIP that the device does not hold at the end; duplicates: extra copies of one " +
			"client_msg_id under different seqs; redelivered: a seq received again (a mention in the lane and again " +
			"in its conversation), dropped by the client",
		"conv_list and first_sync P99 are over repeated identical requests made before the catch-up (sync writes nothing)",
		"redis_bytes_per_body_byte: MEMORY USAGE of every key under the run's prefix (timelines, dedupe, meta, " +
			"members, every member's inbox, lanes, cursors) over the raw bytes of the 5 days' bodies",
		"baseline: the VIP's copies in a flat Redis list, pulled in one box over HTTP (JSON, base64 bodies like the " +
			"API), newest 200 per conversation; the cursor then moves to the end, so what was cut is lost",
	}
	if b := r.Before; b != nil {
		r.Notes = append(r.Notes, fmt.Sprintf("before: an earlier run's figures (--before); bytes and counts compare across "+
			"runs, latencies only within one: the baseline's pull P99 was %.1f ms then and %.1f ms in this run",
			b.BaselinePullP99MS, r.BaselinePullP99MS))
	}
}

func printTable(r *result) []harness.Row {
	kb := func(n int) string { return fmt.Sprintf("%.1f KB", float64(n)/1000) }
	ms := func(v float64) string { return fmt.Sprintf("%.1f ms", v) }
	rows := []harness.Row{
		harness.Info("messages to the VIP", fmt.Sprint(r.Messages), fmt.Sprint(r.Messages)),
		harness.Check("lost", fmt.Sprint(r.Lost), fmt.Sprint(r.BaselineLost), "0", r.Lost == 0),
		harness.Check("duplicates", fmt.Sprint(r.Duplicates), "-", "0", r.Duplicates == 0),
		harness.Check("@mentions in first response", fmt.Sprintf("%d / %d", r.MentionsInFirstResponse, r.MentionsExpected),
			fmt.Sprintf("%d / %d", r.BaselineMentionsInFirstResponse, r.MentionsExpected), "all",
			r.MentionsInFirstResponse == r.MentionsExpected),
		harness.Info("direct messages in first response", fmt.Sprintf("%d / %d", r.DirectInFirstResponse, r.DirectExpected), ""),
		harness.Info("first response", kb(r.FirstResponseBytes), kb(r.BaselineFirstResponseBytes)),
		harness.Check("largest response", kb(r.MaxResponseBytes), kb(r.BaselineFirstResponseBytes), "<= 150 KB",
			r.MaxResponseBytes <= targetMaxResponseBytes),
		harness.Info("first response, decoded", kb(r.FirstResponseDecodedSize), ""),
		harness.Check("responses (syncs + gap pages)", fmt.Sprintf("%d + %d", r.Responses, r.PageResponses), "1", "<= 60",
			r.Responses+r.PageResponses <= targetResponses),
		harness.Check("conversation list P99", ms(r.ConvListP99MS), "-", "<= 20 ms", r.ConvListP99MS <= targetConvListP99MS),
		harness.Check("first sync P99", ms(r.FirstSyncP99MS), ms(r.BaselinePullP99MS), "<= 200 ms",
			r.FirstSyncP99MS <= targetFirstSyncP99MS),
		harness.Info("full catch-up", ms(r.FullCatchupMS), ms(r.BaselineFullCatchupMS)+" (then lost)"),
		harness.Info("full catch-up bytes", kb(int(r.FullCatchupBytes)), kb(r.BaselineFirstResponseBytes)),
		harness.Info("full catch-up bytes, decoded", kb(int(r.FullCatchupDecodedBytes)), ""),
		harness.Check("full catch-up bytes per body byte", fmt.Sprintf("%.2f", r.FullCatchupPerBodyByte), "-", "<= 1.0",
			r.FullCatchupPerBodyByte <= targetCatchupPerBodyByte),
		harness.Check("Redis bytes per body byte", fmt.Sprintf("%.2f", r.RedisBytesPerBodyByte),
			fmt.Sprintf("%.0f (extrapolated)", r.BaselineBytesPerBodyByteExtrapolated), "<= 2",
			r.RedisBytesPerBodyByte <= targetBytesPerBodyByte),
		harness.Info("  of which conversation keys", fmt.Sprintf("%.2f", r.ConvBytesPerBodyByte), ""),
		harness.Info("pipeline drain (produce + fanout)", ms(r.PipelineDrainMS), ""),
	}
	if b := r.Before; b != nil {
		rows = append(rows,
			harness.Info("before: first / largest response", kb(b.FirstResponseBytes)+" / "+kb(b.MaxResponseBytes), ""),
			harness.Info("before: responses (syncs + gap pages)", fmt.Sprintf("%d + %d", b.Responses, b.PageResponses), ""),
			harness.Info("before: full catch-up bytes", kb(int(b.FullCatchupBytes)), ""),
			harness.Info("before: full catch-up bytes per body byte", fmt.Sprintf("%.2f", b.perBodyByte()), ""),
			harness.Info("before: first sync P99, full catch-up", ms(b.FirstSyncP99MS)+", "+ms(b.FullCatchupMS), ""))
	}
	if c := r.Sealing; c != nil {
		rows = append(rows,
			harness.Info("sealed vs clear: first sync P50", ms(c.SealedFirstSyncP50MS), ms(c.ClearFirstSyncP50MS)+" (clear)"),
			harness.Info("sealed vs clear: first sync P99", ms(c.SealedFirstSyncP99MS), ms(c.ClearFirstSyncP99MS)+" (clear)"),
			harness.Info("sealed vs clear: full catch-up", ms(c.SealedFullCatchupMS), ms(c.ClearFullCatchupMS)+" (clear)"),
			harness.Info("sealed vs clear: pipeline drain", ms(c.SealedPipelineDrainMS), ms(c.ClearPipelineDrainMS)+" (clear)"),
			harness.Info("sealed vs clear: Redis bytes per body byte", fmt.Sprintf("%.3f", c.SealedRedisBytesPerBody),
				fmt.Sprintf("%.3f (clear; %+.1f bytes a message)", c.ClearRedisBytesPerBodyByte, c.RedisBytesPerMessage)))
	}
	title := "vip: the founding scenario (scale %g)"
	if r.Sealed {
		title += ", bodies sealed at rest"
	}
	harness.PrintTable(fmt.Sprintf(title, r.Scale), rows)
	return rows
}

// sealingCost is what sealing bodies at rest costs: the same scenario on
// fresh stores, in the clear and sealed, in one run.
type sealingCost struct {
	ClearFirstSyncP50MS        float64 `json:"clear_first_sync_p50_ms"`
	ClearFirstSyncP99MS        float64 `json:"clear_first_sync_p99_ms"`
	SealedFirstSyncP50MS       float64 `json:"sealed_first_sync_p50_ms"`
	SealedFirstSyncP99MS       float64 `json:"sealed_first_sync_p99_ms"`
	ClearConvListP99MS         float64 `json:"clear_conv_list_p99_ms"`
	SealedConvListP99MS        float64 `json:"sealed_conv_list_p99_ms"`
	ClearFullCatchupMS         float64 `json:"clear_full_catchup_ms"`
	SealedFullCatchupMS        float64 `json:"sealed_full_catchup_ms"`
	ClearPipelineDrainMS       float64 `json:"clear_pipeline_drain_ms"`
	SealedPipelineDrainMS      float64 `json:"sealed_pipeline_drain_ms"`
	ClearRedisBytesPerBodyByte float64 `json:"clear_redis_bytes_per_body_byte"`
	SealedRedisBytesPerBody    float64 `json:"sealed_redis_bytes_per_body_byte"`
	RedisBytesPerMessage       float64 `json:"sealed_extra_redis_bytes_per_message"`
	// Kinds: the memory of each kind of key in both runs, largest first.
	Kinds []kindCost `json:"memory_by_kind"`
}

// kindCost is one kind of key's memory in the clear and sealed runs.
type kindCost struct {
	Kind        string  `json:"kind"`
	ClearBytes  int64   `json:"clear_bytes"`
	SealedBytes int64   `json:"sealed_bytes"`
	PerMessage  float64 `json:"sealed_extra_bytes_per_message"`
}

func sealingCostOf(clear, sealed *result) *sealingCost {
	return &sealingCost{
		ClearFirstSyncP50MS: clear.FirstSyncP50MS, ClearFirstSyncP99MS: clear.FirstSyncP99MS,
		SealedFirstSyncP50MS: sealed.FirstSyncP50MS, SealedFirstSyncP99MS: sealed.FirstSyncP99MS,
		ClearConvListP99MS: clear.ConvListP99MS, SealedConvListP99MS: sealed.ConvListP99MS,
		ClearFullCatchupMS: clear.FullCatchupMS, SealedFullCatchupMS: sealed.FullCatchupMS,
		ClearPipelineDrainMS: clear.PipelineDrainMS, SealedPipelineDrainMS: sealed.PipelineDrainMS,
		ClearRedisBytesPerBodyByte: clear.RedisBytesPerBodyByte, SealedRedisBytesPerBody: sealed.RedisBytesPerBodyByte,
		RedisBytesPerMessage: harness.Round(harness.Ratio(float64(sealed.RedisBytes-clear.RedisBytes), float64(sealed.Messages)), 1),
		Kinds:                kindCosts(clear.Memory, sealed.Memory, sealed.Messages),
	}
}

// kindCosts pairs the kinds of key of two censuses, in the sealed run's
// order (largest first), kinds only one run has included.
func kindCosts(clear, sealed harness.Census, messages int) []kindCost {
	byKind := map[string]*kindCost{}
	var out []*kindCost
	add := func(kind string) *kindCost {
		if byKind[kind] == nil {
			byKind[kind] = &kindCost{Kind: kind}
			out = append(out, byKind[kind])
		}
		return byKind[kind]
	}
	for _, k := range sealed.Kinds {
		add(k.Kind).SealedBytes = k.Bytes
	}
	for _, k := range clear.Kinds {
		add(k.Kind).ClearBytes = k.Bytes
	}
	res := make([]kindCost, len(out))
	for i, k := range out {
		k.PerMessage = harness.Round(harness.Ratio(float64(k.SealedBytes-k.ClearBytes), float64(messages)), 2)
		res[i] = *k
	}
	return res
}

// before is what an earlier result said of the catch-up.
type before struct {
	FirstResponseBytes int     `json:"first_response_bytes"`
	MaxResponseBytes   int     `json:"max_response_bytes"`
	Responses          int     `json:"responses"`
	PageResponses      int     `json:"page_responses"`
	FullCatchupBytes   int64   `json:"full_catchup_bytes"`
	BodyBytes          int64   `json:"body_bytes"`
	FirstSyncP99MS     float64 `json:"first_sync_p99_ms"`
	FullCatchupMS      float64 `json:"full_catchup_ms"`
	BaselinePullP99MS  float64 `json:"baseline_pull_p99_ms"`
}

func (b *before) perBodyByte() float64 {
	return harness.Round(harness.Ratio(float64(b.FullCatchupBytes), float64(b.BodyBytes)), 3)
}

// readBefore reads the catch-up figures of an earlier --json result; a
// result with a before of its own gives that one's, so that a rerun
// compares with the same earlier figures.
func readBefore(path string) (*before, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("-before: %w", err)
	}
	var r struct {
		before
		Before *before `json:"before"`
	}
	if err := json.Unmarshal(data, &r); err != nil {
		return nil, fmt.Errorf("-before %s: %w", path, err)
	}
	if r.Before != nil {
		return r.Before, nil
	}
	return &r.before, nil
}
