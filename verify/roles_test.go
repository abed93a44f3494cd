package verify

import (
	"context"
	"fmt"
	"github.com/offlinebox/offlinebox/redisstore/rebuild"
	"io"
	"log/slog"
	"maps"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"google.golang.org/protobuf/proto"

	"github.com/offlinebox/offlinebox/internal/testenv"
	"github.com/offlinebox/offlinebox/redisstore"
	"github.com/offlinebox/offlinebox/schemas"
	"github.com/offlinebox/offlinebox/workers/history"
)

// A group with an owner and two admins, one of them a founder promoted by
// a later join, loses Redis whole; rebuilt from what the history worker
// stored, the admins are admins again and a plain member is still not one.
func TestARebuildFromClickHouseGivesTheGroupItsAdminsBack(t *testing.T) {
	rdb, prefix := testenv.Redis(t)
	w := newWorld(t, rdb, prefix)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	ch, _ := testenv.History(t)
	sink, err := history.New(history.Config{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}, ch)
	if err != nil {
		t.Fatal(err)
	}

	g := schemas.ConvType_CONV_TYPE_GROUP
	var published []*kgo.Record
	sequence := func(id, sender string, kind schemas.Kind, role schemas.Role, users ...string) redisstore.SequencedItem {
		t.Helper()
		m := &schemas.Message{ClientMsgId: id, ConvId: "g", ConvType: g, Sender: sender, Kind: kind,
			Recipients: users, Role: role, ContentType: "text/plain", Body: []byte(id)}
		res, err := w.s.Sequence(ctx, "g", []*schemas.Message{m}, nil, w.now.UnixMilli())
		if err != nil {
			t.Fatalf("sequence %s: %v", id, err)
		}
		it := res.Items[0]
		if it.Status == redisstore.SeqNew {
			v, err := proto.Marshal(it.Sequenced)
			if err != nil {
				t.Fatal(err)
			}
			published = append(published, &kgo.Record{Topic: schemas.TopicSequenced, Offset: int64(len(published)), Value: v})
		}
		return it
	}
	join, message := schemas.Kind_KIND_MEMBER_JOIN, schemas.Kind_KIND_MESSAGE
	unspecified, admin := schemas.Role_ROLE_UNSPECIFIED, schemas.Role_ROLE_ADMIN
	for _, st := range []struct {
		id, sender string
		kind       schemas.Kind
		role       schemas.Role
		users      []string
	}{
		{"found", "alice", join, unspecified, []string{"alice", "bob", "carol"}},
		{"hello", "bob", message, unspecified, nil},
		{"erin-joins-as-admin", "alice", join, admin, []string{"erin"}},
		{"bob-made-admin", "alice", join, admin, []string{"bob"}},
		{"welcome", "erin", message, unspecified, nil},
	} {
		if it := sequence(st.id, st.sender, st.kind, st.role, st.users...); it.Status != redisstore.SeqNew {
			t.Fatalf("seed %s: %+v", st.id, it)
		}
	}
	wantRoles := map[string]string{"alice": "o", "bob": "a", "erin": "a"}
	roles, _, err := w.s.GroupRoles(ctx, "g")
	if err != nil || !maps.Equal(roles, wantRoles) {
		t.Fatalf("roles before the loss %v, %v; want %v", roles, err, wantRoles)
	}
	if dead, err := sink.Handle(ctx, published); err != nil || len(dead) != 0 {
		t.Fatalf("history sink: %d dead letters, %v", len(dead), err)
	}

	keys, err := rdb.Keys(ctx, prefix+"*").Result()
	if err != nil || len(keys) == 0 {
		t.Fatalf("keys %v, %v", keys, err)
	}
	if err := rdb.Del(ctx, keys...).Err(); err != nil { // Redis is emptied
		t.Fatal(err)
	}
	n, err := rebuild.New(w.s).RebuildAll(ctx, ch, ch, rebuild.Options{Now: w.now}, func(r rebuild.Result, err error) {
		if err != nil || r.Members != rebuild.MembersRestored {
			t.Errorf("rebuild %s: %+v, %v; want its members restored", r.Conv, r, err)
		}
	})
	if err != nil || n != 1 {
		t.Fatalf("rebuilt %d conversations, %v; want 1", n, err)
	}
	if roles, _, err = w.s.GroupRoles(ctx, "g"); err != nil || !maps.Equal(roles, wantRoles) {
		t.Fatalf("roles after the rebuild %v, %v; want %v", roles, err, wantRoles)
	}
	if rep := check(t, w.s, nil); !rep.OK() {
		t.Fatalf("verify after the rebuild:\n%s", rep)
	}

	for _, adder := range []string{"bob", "erin"} {
		if it := sequence(adder+"-adds", adder, join, unspecified, fmt.Sprint("new-of-", adder)); it.Status != redisstore.SeqNew {
			t.Fatalf("admin %s adds a member after the rebuild: %+v (%v), want it sequenced", adder, it, it.Reason)
		}
	}
	if it := sequence("carol-adds", "carol", join, unspecified, "zed"); it.Status != redisstore.SeqRejected {
		t.Fatalf("plain member carol adds a member after the rebuild: %+v, want it refused", it)
	}
	if rep := check(t, w.s, nil); !rep.OK() {
		t.Fatalf("verify after the admins added members:\n%s", rep)
	}
}
