package topology

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/offlinebox/offlinebox/schemas"
	"github.com/offlinebox/offlinebox/workers/push"
)

func TestEveryStageHasAGroupOfItsOwnAndRunsOnThePipelinesTopics(t *testing.T) {
	groups := map[string]string{}
	for _, s := range Stages() {
		t.Run(s.Name, func(t *testing.T) {
			if other, ok := groups[s.Group]; ok {
				t.Errorf("group %q is also %s's", s.Group, other)
			}
			groups[s.Group] = s.Name
			for _, topic := range append(slices.Clone(s.Inputs), s.Outputs...) {
				if !slices.Contains(Topics(), topic) {
					t.Errorf("topic %q is not among the pipeline's topics %v", topic, Topics())
				}
			}
			if slices.Contains(s.Inputs, s.DeadLetterTopic) {
				t.Errorf("dead-letter topic %q is one the stage reads", s.DeadLetterTopic)
			}
			if err := s.RunnerConfig([]string{"127.0.0.1:9092"}).Validate(); err != nil {
				t.Errorf("runner config: %v", err)
			}
		})
	}
}

func TestEveryTopicAStageReadsIsWrittenByAStageOrTheAPIOrTheRunners(t *testing.T) {
	// The API produces im.messages and im.receipts; every runner writes
	// its stage's dead letters.
	written := []string{schemas.TopicMessages, schemas.TopicReceipts}
	for _, s := range Stages() {
		written = append(written, s.Outputs...)
		written = append(written, s.DeadLetterTopic)
	}
	for _, s := range Stages() {
		for _, topic := range s.Inputs {
			if !slices.Contains(written, topic) {
				t.Errorf("%s reads %q, which no stage, runner or the API writes", s.Name, topic)
			}
		}
	}
	if got := Fanout().Outputs; !slices.Equal(got, []string{schemas.TopicSequenced}) {
		t.Errorf("fanout's outputs are %v, want only %s (the worker produces there)", got, schemas.TopicSequenced)
	}
}

// TestEveryTopicAStageConsumesProducesOrDeadLettersToIsAPipelineTopic:
// Topics is what migrate creates and what the benchmarks seed and list,
// so a topic a worker touches that is missing there exists nowhere a
// broker does not create topics on demand.
func TestEveryTopicAStageConsumesProducesOrDeadLettersToIsAPipelineTopic(t *testing.T) {
	for _, s := range Stages() {
		touched := map[string]string{s.DeadLetterTopic: "dead-letters to"}
		for _, topic := range s.Inputs {
			touched[topic] = "consumes"
		}
		for _, topic := range s.Outputs {
			touched[topic] = "produces to"
		}
		for topic, how := range touched {
			if !slices.Contains(Topics(), topic) {
				t.Errorf("%s %s %q, which is not among the pipeline's topics %v", s.Name, how, topic, Topics())
			}
		}
	}
	if !slices.Contains(Topics(), push.UnusedDeadLetterTopic) {
		t.Errorf("push-rejected's dead-letter topic %q is not among the pipeline's topics", push.UnusedDeadLetterTopic)
	}
	seen := map[string]bool{}
	for _, topic := range Topics() {
		if seen[topic] {
			t.Errorf("topic %q is listed twice", topic)
		}
		seen[topic] = true
	}
}

// TestComposeCreatesExactlyThePipelinesTopics: docker-compose.yml's
// one-shot topics job creates the topics by name, without the binary, so
// it is held to Topics here.
func TestComposeCreatesExactlyThePipelinesTopics(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("..", "docker-compose.yml"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^\s*for t in ([^;]*); do$`).FindSubmatch(raw)
	if m == nil {
		t.Fatal("docker-compose.yml has no `for t in ...; do` line creating the topics")
	}
	got := strings.Fields(string(m[1]))
	want := slices.Clone(Topics())
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Fatalf("docker-compose.yml creates %v, want the pipeline's topics %v", got, want)
	}
}

func TestAStageGetsOnlyTheFetchSettingsItDeclares(t *testing.T) {
	cases := []struct {
		stage Stage
		opts  int
	}{
		{Fanout(), 0},
		{Convindex(), 0},
		{History(), 2},
		{Push(), 1},
		{PushEphemeral(), 3},
		{PushRejected(), 1},
	}
	for _, tc := range cases {
		if got := len(tc.stage.RunnerConfig(nil).ExtraOpts); got != tc.opts {
			t.Errorf("%s: %d client options, want %d", tc.stage.Name, got, tc.opts)
		}
	}
}
