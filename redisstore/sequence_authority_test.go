package redisstore

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"testing"

	"github.com/offlinebox/offlinebox/schemas"
)

// authStep is one record sequenced on its own (or, with batch, together
// with the steps before it that have batch set) and what must become of it.
type authStep struct {
	m    *schemas.Message
	want string // "new N" or "rejected field: reason"
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

func bySystem(m *schemas.Message) *schemas.Message {
	m.Authority = schemas.Authority_AUTHORITY_SYSTEM
	return m
}

// founded is the founding record every case but the founding ones starts
// with: alice owns the group, bob and carol are members.
func founded(steps ...authStep) []authStep {
	return append([]authStep{{joinOf("found", "alice", "alice", "bob", "carol"), "new 1"}}, steps...)
}

func TestSequenceEnforcesTheGroupsAuthority(t *testing.T) {
	admin, owner, member := schemas.Role_ROLE_ADMIN, schemas.Role_ROLE_OWNER, schemas.Role_ROLE_MEMBER
	cases := []struct {
		name    string
		steps   []authStep
		members []string
		roles   map[string]string
	}{
		{
			name: "of two founding joins the first founds the group and the stranger's is refused",
			steps: []authStep{
				{joinOf("create", "alice", "alice", "bob"), "new 1"},
				{joinOf("grab", "mallory", "mallory"), "rejected sender: is not a member of the group"},
				{leaveOf("oust", "mallory", "alice"), "rejected sender: is not a member of the group"},
				{groupMsg("g", "peek", "mallory"), "rejected sender: is not a member of the group"},
			},
			members: []string{"alice", "bob"},
			roles:   map[string]string{"alice": "o"},
		},
		{
			name: "a founding join that does not name its sender is refused and creates nothing",
			steps: []authStep{
				{joinOf("create", "mallory", "alice", "bob"), "rejected recipients: the founders of a group include its sender, who owns it"},
				{joinOf("create2", "alice", "alice", "bob"), "new 1"},
			},
			members: []string{"alice", "bob"},
			roles:   map[string]string{"alice": "o"},
		},
		{
			name: "a group founded by a message has its sender alone, as owner",
			steps: []authStep{
				{groupMsg("g", "hello", "alice"), "new 1"},
				{groupMsg("g", "hi", "bob"), "rejected sender: is not a member of the group"},
			},
			members: []string{"alice"},
			roles:   map[string]string{"alice": "o"},
		},
		{
			name: "a non-member's message is refused, a member's is sequenced",
			steps: founded(
				authStep{groupMsg("g", "spam", "dave"), "rejected sender: is not a member of the group"},
				authStep{groupMsg("g", "hi", "bob"), "new 2"},
			),
			members: []string{"alice", "bob", "carol"},
			roles:   map[string]string{"alice": "o"},
		},
		{
			name: "a member may neither remove the owner nor add anyone",
			steps: founded(
				authStep{leaveOf("oust", "bob", "alice"), "rejected sender: only the owner or an admin removes others"},
				authStep{joinOf("invite", "bob", "dave"), "rejected sender: only the owner or an admin adds members"},
				authStep{withRole(joinOf("promote", "bob", "bob"), admin), "rejected sender: only the owner or an admin adds members"},
			),
			members: []string{"alice", "bob", "carol"},
			roles:   map[string]string{"alice": "o"},
		},
		{
			name: "the owner adds and removes; an admin adds and removes plain members only",
			steps: founded(
				authStep{joinOf("add-dave", "alice", "dave"), "new 2"},
				authStep{withRole(joinOf("make-admin", "alice", "bob"), admin), "new 3"},
				authStep{joinOf("add-erin", "bob", "erin"), "new 4"},
				authStep{leaveOf("drop-dave", "bob", "dave"), "new 5"},
				authStep{leaveOf("drop-alice", "bob", "alice"), "rejected recipients: alice is the owner or an admin: only the owner removes them"},
				authStep{withRole(joinOf("admin-erin", "bob", "erin"), admin), "rejected role: only the owner gives the admin or owner role"},
				authStep{leaveOf("drop-bob", "alice", "bob"), "new 6"},
			),
			members: []string{"alice", "carol", "erin"},
			roles:   map[string]string{"alice": "o"},
		},
		{
			name: "anyone leaves by themselves, the owner too, who hands over to an admin",
			steps: founded(
				authStep{leaveOf("bye-carol", "carol", "carol"), "new 2"},
				authStep{joinOf("add-dave", "alice", "dave"), "new 3"},
				authStep{withRole(joinOf("make-admin", "alice", "dave"), admin), "new 4"},
				authStep{leaveOf("bye-alice", "alice", "alice"), "new 5"},
			),
			members: []string{"bob", "dave"},
			roles:   map[string]string{"dave": "o"},
		},
		{
			name: "an owner who leaves without admins hands over to the earliest member",
			steps: founded(
				authStep{joinOf("add-aaron", "alice", "aaron"), "new 2"},
				authStep{leaveOf("bye-alice", "alice", "alice"), "new 3"},
			),
			members: []string{"aaron", "bob", "carol"},
			roles:   map[string]string{"bob": "o"},
		},
		{
			name: "the owner hands ownership over and takes the admin role back",
			steps: founded(
				authStep{withRole(joinOf("give", "alice", "bob"), owner), "new 2"},
				authStep{withRole(joinOf("demote-bob", "alice", "bob"), member), "rejected recipients: bob owns the group: ownership moves by giving the owner role to another member"},
				authStep{withRole(joinOf("demote-alice", "bob", "alice"), member), "new 3"},
				authStep{withRole(joinOf("demote-self", "bob", "bob"), member), "rejected recipients: bob owns the group: ownership moves by giving the owner role to another member"},
			),
			members: []string{"alice", "bob", "carol"},
			roles:   map[string]string{"bob": "o"},
		},
		{
			name: "a record of system authority is not checked against the roles",
			steps: founded(
				authStep{bySystem(joinOf("svc-add", "groupsvc", "mallory")), "new 2"},
				authStep{bySystem(leaveOf("svc-drop", "groupsvc", "alice")), "new 3"},
				authStep{bySystem(groupMsg("g", "svc-note", "groupsvc")), "new 4"},
			),
			members: []string{"bob", "carol", "mallory"},
			roles:   map[string]string{"bob": "o"},
		},
		{
			name: "a group founded by a system record is owned by its first founder",
			steps: []authStep{
				{bySystem(joinOf("svc-create", "groupsvc", "carol", "bob")), "new 1"},
				{joinOf("add", "carol", "dave"), "new 2"},
			},
			members: []string{"bob", "carol", "dave"},
			roles:   map[string]string{"carol": "o"},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := seqTestStore(t, 0)
			ctx := context.Background()
			for i, st := range tc.steps {
				before := timelineLen(t, s, "g")
				res, err := s.Sequence(ctx, "g", []*schemas.Message{st.m}, nil, seqTestNow+int64(i))
				if err != nil {
					t.Fatal(err)
				}
				if got := seqs(res.Items)[0]; got != st.want {
					t.Fatalf("step %d (%s by %s): got %q, want %q", i, st.m.GetClientMsgId(), st.m.GetSender(), got, st.want)
				}
				if res.Items[0].Status == SeqRejected && timelineLen(t, s, "g") != before {
					t.Fatalf("step %d: a refused record changed the timeline", i)
				}
			}
			mem, err := s.Members(ctx, "g")
			if err != nil {
				t.Fatal(err)
			}
			if got := slices.Sorted(maps.Keys(mem)); !slices.Equal(got, tc.members) {
				t.Errorf("members %v, want %v", got, tc.members)
			}
			roles, _ := s.rdb.HGetAll(ctx, s.keys.Roles("g")).Result()
			if fmt.Sprint(roles) != fmt.Sprint(tc.roles) {
				t.Errorf("roles %v, want %v", roles, tc.roles)
			}
		})
	}
}

func TestARefusedFirstRecordCreatesNoConversation(t *testing.T) {
	s := seqTestStore(t, 0)
	ctx := context.Background()
	res, err := s.Sequence(ctx, "g", []*schemas.Message{leaveOf("l", "mallory", "mallory")}, nil, seqTestNow)
	if err != nil {
		t.Fatal(err)
	}
	if res.Items[0].Status != SeqRejected {
		t.Fatalf("a leave founding a group: %v, want it refused", seqs(res.Items))
	}
	if n, _ := s.rdb.Exists(ctx, s.keys.ConvMeta("g"), s.keys.Members("g"), s.keys.Roles("g")).Result(); n != 0 {
		t.Fatalf("%d keys of the refused conversation exist, want none", n)
	}
}

func TestRacingFoundersInOneBatchLeaveTheFirstInCharge(t *testing.T) {
	s := seqTestStore(t, 0)
	res, err := s.Sequence(context.Background(), "g", []*schemas.Message{
		joinOf("create", "alice", "alice", "bob"),
		joinOf("grab", "mallory", "mallory"),
		leaveOf("oust", "mallory", "alice"),
	}, nil, seqTestNow)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"new 1", "rejected sender: is not a member of the group", "rejected sender: is not a member of the group"}
	if got := seqs(res.Items); !slices.Equal(got, want) {
		t.Fatalf("got %q, want %q", got, want)
	}
	if _, ok := res.Members["mallory"]; ok || len(res.Members) != 2 {
		t.Fatalf("members %v, want alice and bob only", res.Members)
	}
}

func TestALeaveKeepsTheSpansAFormerMemberBelongedTo(t *testing.T) {
	s := seqTestStore(t, 0)
	ctx := context.Background()
	steps := founded(
		authStep{groupMsg("g", "m2", "alice"), "new 2"},
		authStep{leaveOf("bye", "bob", "bob"), "new 3"},
		authStep{groupMsg("g", "m4", "alice"), "new 4"},
		authStep{joinOf("back", "alice", "bob"), "new 5"},
		authStep{groupMsg("g", "m6", "alice"), "new 6"},
		authStep{leaveOf("bye2", "bob", "bob"), "new 7"},
	)
	for i, st := range steps {
		res, err := s.Sequence(ctx, "g", []*schemas.Message{st.m}, nil, seqTestNow+int64(i))
		if err != nil {
			t.Fatal(err)
		}
		if got := seqs(res.Items)[0]; got != st.want {
			t.Fatalf("step %d: got %q, want %q", i, got, st.want)
		}
	}
	got, _ := s.rdb.HGet(ctx, s.keys.PastMembers("g"), "bob").Result()
	if got != "0-3,5-7" {
		t.Fatalf("bob's past spans %q, want 0-3,5-7 (seqs 1..2 and 6)", got)
	}
}

func timelineLen(t *testing.T, s *Store, conv string) int64 {
	t.Helper()
	n, err := s.rdb.LLen(context.Background(), s.keys.Timeline(conv)).Result()
	if err != nil {
		t.Fatal(err)
	}
	return n
}
