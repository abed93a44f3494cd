package redisstore

import (
	"context"
	"testing"

	"github.com/offlinebox/offlinebox/schemas"
)

func TestTheNewestRecordCarryingATagSetsTheConversationTagAndAReplayChangesNothing(t *testing.T) {
	s := seqTestStore(t, 100)
	ctx := context.Background()
	tagged := func(m *schemas.Message, tag string) *schemas.Message { m.Tag = tag; return m }
	steps := []struct {
		name string
		msgs []*schemas.Message
		want string
	}{
		{"the creating record", []*schemas.Message{tagged(memberMsg("g", "j1", "alice", schemas.Kind_KIND_MEMBER_JOIN, "alice", "bob"), "sales")}, "sales"},
		{"a record without a tag", []*schemas.Message{groupMsg("g", "m1", "alice")}, "sales"},
		{"a later control record, in one batch with a message", []*schemas.Message{
			tagged(memberMsg("g", "j2", "alice", schemas.Kind_KIND_MEMBER_JOIN, "carol"), "finance"), groupMsg("g", "m2", "bob")}, "finance"},
		{"a replay of the creating record", []*schemas.Message{tagged(memberMsg("g", "j1", "alice", schemas.Kind_KIND_MEMBER_JOIN, "alice", "bob"), "sales")}, "finance"},
	}
	for _, st := range steps {
		if _, err := s.Sequence(ctx, "g", st.msgs, nil, seqTestNow); err != nil {
			t.Fatalf("%s: %v", st.name, err)
		}
		info, _, err := s.ConvRetentionInfo(ctx, "g")
		if err != nil {
			t.Fatal(err)
		}
		if info.Tag != st.want {
			t.Fatalf("after %s: tag %q, want %q", st.name, info.Tag, st.want)
		}
	}
}
