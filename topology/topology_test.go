package topology

import (
	"slices"
	"testing"

	"github.com/offlinebox/offlinebox/schemas"
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
