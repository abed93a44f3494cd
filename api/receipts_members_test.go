package api

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	obclient "github.com/offlinebox/offlinebox/client"
	"github.com/offlinebox/offlinebox/schemas"
	"github.com/redis/go-redis/v9"
)

// TestReceiptsCountCurrentMembersOnly: in a group {sa, sb, sc}, after sc
// left, sc's read and ack of seq 2 move only sc's own cursors: sa is
// shown read by 0 of 1 (sb, who never read), and sc's receipts view is
// refused. Sets written before the members-only rule (holding a former
// member, marked with the bare epoch) are counted over the members and
// cleaned by the next raise.
func TestReceiptsCountCurrentMembersOnly(t *testing.T) {
	le := newLiveEnv(t, Config{})
	le.produce(founding("g3", "sa", "sb", "sc"), textMsg("g3", "g3-1", "sa"))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	sender := le.device(0, "sa", "phone")
	eventually(t, "the message is sequenced", func() (bool, string) {
		got, _, err := sender.http.Sync(ctx, obclient.SyncRequest{})
		return err == nil && len(got.Conversations) == 1 && got.Conversations[0].MaxSeq == 2, ""
	})
	counts := func() receiptsJSON {
		t.Helper()
		var rc receiptsJSON
		le.callOK(200, "GET", "/v1/conversations/g3/receipts?seq=2", le.token("sa", "phone"), nil, &rc)
		return rc
	}
	le.produce(&schemas.Message{ClientMsgId: "g3-leave", ConvId: "g3", ConvType: schemas.ConvType_CONV_TYPE_GROUP,
		Sender: "sc", Kind: schemas.Kind_KIND_MEMBER_LEAVE, Recipients: []string{"sc"}})
	eventually(t, "the leave is applied", func() (bool, string) {
		rc := counts()
		return rc.Members != nil && *rc.Members == 1, fmt.Sprintf("%+v", rc)
	})
	le.callOK(200, "POST", "/v1/ack", le.token("sc", "d"), map[string]any{"acks": []map[string]any{{"conv_id": "g3", "seq": 2}}}, nil)
	le.callOK(202, "POST", "/v1/read", le.token("sc", "d"), map[string]any{"receipts": []map[string]any{{"conv_id": "g3", "seq": 2}}}, nil)
	k, rdb := le.store.Keys(), le.store.Client()
	eventually(t, "sc's read reached its own read cursor", func() (bool, string) {
		r := rdb.HGet(ctx, k.Inbox("sc"), "g3:r").Val()
		return r == "2", r
	})
	if rc := counts(); *rc.Delivered != 0 || *rc.Read != 0 || *rc.Members != 1 || rc.State != StateStored {
		t.Fatalf("after a former member's ack and read the sender sees %+v, want delivered 0 read 0 of 1", rc)
	}
	le.callOK(http.StatusForbidden, "GET", "/v1/conversations/g3/receipts?seq=2", le.token("sc", "d"), nil, nil)

	// Sets of the old form: sc's cursors written with the bare epoch.
	epoch := rdb.HGet(ctx, k.ConvMeta("g3"), "epoch").Val()
	rdb.ZAdd(ctx, k.Delivered("g3"), redis.Z{Score: 2, Member: "sc"})
	rdb.ZAdd(ctx, k.ReadBy("g3"), redis.Z{Score: 2, Member: "sc"})
	rdb.Set(ctx, k.ReceiptEpoch("g3"), epoch, 0)
	if rc := counts(); *rc.Delivered != 0 || *rc.Read != 0 || *rc.Members != 1 {
		t.Fatalf("old-form sets holding a former member: %+v, want delivered 0 read 0 of 1", rc)
	}
	le.callOK(200, "POST", "/v1/ack", le.token("sb", "d"), map[string]any{"acks": []map[string]any{{"conv_id": "g3", "seq": 2}}}, nil)
	if rc := counts(); *rc.Delivered != 1 || *rc.Read != 0 || *rc.Members != 1 {
		t.Fatalf("after sb's ack: %+v, want delivered 1 read 0 of 1", rc)
	}
	for _, set := range []string{k.Delivered("g3"), k.ReadBy("g3")} {
		if err := rdb.ZScore(ctx, set, "sc").Err(); err == nil {
			t.Fatalf("%s still holds the former member after a raise", set)
		}
	}
	if f := rdb.Get(ctx, k.ReceiptEpoch("g3")).Val(); f != epoch+":m" {
		t.Fatalf("the sets are marked %q after the clean, want %q", f, epoch+":m")
	}
}
