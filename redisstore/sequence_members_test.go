package redisstore

import (
	"context"
	"fmt"
	"maps"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/offlinebox/offlinebox/schemas"
)

// memberAnswers records what the sequencing script answered in place of
// the members: "=" (unchanged) or "list".
type memberAnswers struct{ got []string }

func (a *memberAnswers) DialHook(next redis.DialHook) redis.DialHook { return next }
func (a *memberAnswers) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}
func (a *memberAnswers) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		err := next(ctx, cmd)
		c, ok := cmd.(*redis.Cmd)
		if !ok || err != nil || !isSequenceScript(cmd) {
			return err
		}
		raw, _ := c.Slice()
		n := (len(raw) - 8) / 3
		if v, ok := raw[4+3*n].(string); ok && v == membersUnchanged {
			a.got = append(a.got, "=")
		} else {
			a.got = append(a.got, "list")
		}
		return err
	}
}

func isSequenceScript(cmd redis.Cmder) bool {
	if name := cmd.Name(); name != "evalsha" && name != "eval" {
		return false
	}
	for _, a := range cmd.Args() {
		if k, ok := a.(string); ok && strings.HasSuffix(k, ":tl") {
			return true
		}
	}
	return false
}

// A group's members are read and answered by the sequencing script only
// when they changed since the list the store holds: messages get the same
// list back without it, a join or leave answers the new list, and every
// answer equals the member hash. A store that never saw the group (a
// second fanout, a restart) gets the list; so does a conversation too
// small to keep a list of.
func TestSequencingAnswersAGroupsMembersOnlyWhenTheyChanged(t *testing.T) {
	s := seqTestStore(t, 100)
	ans := &memberAnswers{}
	s.rdb.AddHook(ans)
	ctx := context.Background()
	steps := []struct {
		m    *schemas.Message
		want string
	}{
		{memberMsg("g", "create", "ann", schemas.Kind_KIND_MEMBER_JOIN, "ann", "bob", "cid", "e1", "e2", "e3", "e4", "e5"), "list"},
		{groupMsg("g", "m1", "bob"), "="},
		{groupMsg("g", "m2", "cid"), "="},
		{memberMsg("g", "join", "ann", schemas.Kind_KIND_MEMBER_JOIN, "dan"), "list"},
		{groupMsg("g", "m3", "dan"), "="},
		{memberMsg("g", "again", "ann", schemas.Kind_KIND_MEMBER_JOIN, "dan"), "="}, // already a member: no change
		{memberMsg("g", "leave", "bob", schemas.Kind_KIND_MEMBER_LEAVE, "bob"), "list"},
		{groupMsg("g", "refused", "bob"), "="}, // rejected: nothing changed
		{groupMsg("g", "m4", "ann"), "="},
	}
	for i, st := range steps {
		res, err := s.Sequence(ctx, "g", []*schemas.Message{st.m}, nil, seqTestNow+int64(i))
		if err != nil {
			t.Fatalf("%s: %v", st.m.GetClientMsgId(), err)
		}
		if got := ans.got[len(ans.got)-1]; got != st.want {
			t.Fatalf("%s: the members were answered as %q, want %q", st.m.GetClientMsgId(), got, st.want)
		}
		stored, err := s.rdb.HGetAll(ctx, s.keys.Members("g")).Result()
		if err != nil {
			t.Fatal(err)
		}
		want := map[string]uint64{}
		for u, j := range stored {
			want[u] = readReplyUint(j)
		}
		if !maps.Equal(res.Members, want) {
			t.Fatalf("%s: members %v, the hash holds %v", st.m.GetClientMsgId(), res.Members, want)
		}
	}

	fresh, err := New(s.rdb, s.cfg)
	if err != nil {
		t.Fatal(err)
	}
	res, err := fresh.Sequence(ctx, "g", []*schemas.Message{groupMsg("g", "m5", "cid")}, nil, seqTestNow+100)
	if err != nil || len(res.Members) != 8 || ans.got[len(ans.got)-1] != "list" {
		t.Fatalf("a store without the list: members %v (err %v), answered %q; want the 8 members, as a list",
			res.Members, err, ans.got[len(ans.got)-1])
	}
	for i := range 2 {
		if _, err := s.Sequence(ctx, "d", []*schemas.Message{directMsg("d", fmt.Sprint("d", i), "ann", "bob")}, nil,
			seqTestNow+200+int64(i)); err != nil {
			t.Fatal(err)
		}
		if got := ans.got[len(ans.got)-1]; got != "list" {
			t.Fatalf("direct message %d: members answered as %q, want the list (too small to keep)", i, got)
		}
	}
}
