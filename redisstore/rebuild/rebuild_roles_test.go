package rebuild

import (
	"context"
	"fmt"
	"maps"
	"strings"
	"testing"
	"time"

	"github.com/offlinebox/offlinebox/redisstore"
	"github.com/offlinebox/offlinebox/schemas"
)

var seqTestNow = time.Now().UnixMilli()

// authStep is one record sequenced on its own and what must become of it.
type authStep struct {
	m    *schemas.Message
	want string // "new N" or "rejected field: reason"
}

func groupMsg(conv, id, sender string) *schemas.Message {
	return &schemas.Message{ClientMsgId: id, ConvId: conv, ConvType: schemas.ConvType_CONV_TYPE_GROUP,
		Sender: sender, Kind: schemas.Kind_KIND_MESSAGE, ContentType: "text/plain", Body: []byte("hello " + id)}
}

func memberMsg(conv, id, sender string, kind schemas.Kind, users ...string) *schemas.Message {
	m := groupMsg(conv, id, sender)
	m.Kind, m.Recipients, m.Body = kind, users, nil
	return m
}

func joinOf(id, sender string, users ...string) *schemas.Message {
	return memberMsg("g", id, sender, schemas.Kind_KIND_MEMBER_JOIN, users...)
}

func leaveOf(id, sender string, users ...string) *schemas.Message {
	return memberMsg("g", id, sender, schemas.Kind_KIND_MEMBER_LEAVE, users...)
}

func withRole(m *schemas.Message, r schemas.Role) *schemas.Message {
	m.Role = r
	return m
}

// founded is the founding record every case starts with: alice owns the
// group, bob and carol are members.
func founded(steps ...authStep) []authStep {
	return append([]authStep{{joinOf("found", "alice", "alice", "bob", "carol"), "new 1"}}, steps...)
}

func seqs(items []redisstore.SequencedItem) []string {
	out := make([]string, len(items))
	for i, it := range items {
		switch it.Status {
		case redisstore.SeqNew:
			out[i] = fmt.Sprintf("new %d", it.Sequenced.Seq)
		case redisstore.SeqDuplicate:
			out[i] = fmt.Sprintf("dup %d", it.Sequenced.GetSeq())
		default:
			out[i] = "rejected " + it.Reason.Error()
		}
	}
	return out
}

func TestRebuildReplaysRolesAndSpansAsTheScriptKeepsThem(t *testing.T) {
	s := newRig(t, 0)
	ctx := context.Background()
	steps := founded(
		authStep{withRole(joinOf("make-admin", "alice", "carol"), schemas.Role_ROLE_ADMIN), "new 2"},
		authStep{leaveOf("bye-bob", "bob", "bob"), "new 3"},
		authStep{joinOf("back-bob", "carol", "bob"), "new 4"},
		authStep{leaveOf("bye-alice", "alice", "alice"), "new 5"},
		authStep{leaveOf("drop-bob", "carol", "bob"), "new 6"},
		authStep{joinOf("add-dave", "carol", "dave"), "new 7"},
		authStep{leaveOf("bye-carol", "carol", "carol"), "new 8"},
	)
	r := &memberReplay{members: map[string]uint64{}, roles: map[string]string{}, past: map[string][]string{}}
	for i, st := range steps {
		res, err := s.Sequence(ctx, "g", []*schemas.Message{st.m}, nil, seqTestNow+int64(i))
		if err != nil {
			t.Fatal(err)
		}
		if got := seqs(res.Items)[0]; got != st.want {
			t.Fatalf("step %d: got %q, want %q", i, got, st.want)
		}
		r.apply(res.Items[0].Sequenced, 100)
	}
	roles, _ := s.rdb.HGetAll(ctx, s.keys.Roles("g")).Result()
	past, _ := s.rdb.HGetAll(ctx, s.keys.PastMembers("g")).Result()
	replayed := map[string]string{}
	for u, sp := range r.past {
		replayed[u] = strings.Join(sp, ",")
	}
	// carol (the admin) took over from alice, then left: dave, who joined
	// last but is the only member, owns the group.
	if fmt.Sprint(roles) != "map[dave:o]" || fmt.Sprint(r.roles) != fmt.Sprint(roles) || !maps.Equal(replayed, past) {
		t.Fatalf("script roles %v spans %v; replay roles %v spans %v", roles, past, r.roles, replayed)
	}
	if got := past["bob"]; got != "0-3,4-6" {
		t.Fatalf("bob's spans %q, want 0-3,4-6", got)
	}
}
