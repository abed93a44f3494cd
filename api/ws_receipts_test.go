package api

import (
	"context"
	"fmt"
	"testing"
	"time"

	obclient "github.com/offlinebox/offlinebox/client"
	"github.com/offlinebox/offlinebox/schemas"
)

// TestGroupReceiptsCountMembersWhoseDevicesAcked: in a 200-member group,
// after 150 members' devices ack seq s, s is delivered to 150 of 199;
// replays, device evictions and the sender's own ack change nothing, and
// a read counts as delivered too.
func TestGroupReceiptsCountMembersWhoseDevicesAcked(t *testing.T) {
	le := newLiveEnv(t, Config{})
	members := make([]string, 200)
	for i := range members {
		members[i] = fmt.Sprintf("m%03d", i)
	}
	le.produce(founding("big", members...), textMsg("big", "big-1", "m000"))
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	sender := le.device(0, "m000", "phone")
	eventually(t, "the message is sequenced", func() (bool, string) {
		got, _, err := sender.http.Sync(ctx, obclient.SyncRequest{})
		return err == nil && len(got.Conversations) == 1 && got.Conversations[0].MaxSeq == 2, ""
	})
	sender.connect()
	ack := func(user, dev string, seq uint64) {
		t.Helper()
		le.callOK(200, "POST", "/v1/ack", le.token(user, dev), map[string]any{"acks": []map[string]any{{"conv_id": "big", "seq": seq}}}, nil)
	}
	counts := func() receiptsJSON {
		t.Helper()
		var rc receiptsJSON
		le.callOK(200, "GET", "/v1/conversations/big/receipts?seq=2", le.token("m000", "phone"), nil, &rc)
		return rc
	}
	for i := 1; i <= 150; i++ {
		ack(members[i], "d", 2)
	}
	want := func(what string, delivered, read int) {
		t.Helper()
		rc := counts()
		if rc.Delivered == nil || *rc.Delivered != delivered || *rc.Read != read || *rc.Members != 199 || rc.Sender != "m000" {
			t.Fatalf("%s: receipts %+v, want delivered %d read %d of 199", what, rc, delivered, read)
		}
	}
	want("after 150 acks", 150, 0)
	live := sender.until("receipt", func(f obclient.Frame) bool { return f.ConvID == "big" && f.Delivered == 150 })
	if live.Seq != 2 || live.Members != 199 {
		t.Fatalf("the sender's live receipt is %s", live.Raw)
	}
	for i := 1; i <= 10; i++ {
		ack(members[i], "d", 2)  // replay
		ack(members[i], "d2", 1) // another device, lower
	}
	want("after replays", 150, 0)
	for d := 0; d < 6; d++ { // more devices than kept: "d" is evicted
		ack(members[1], fmt.Sprintf("extra%d", d), 1)
	}
	ack("m000", "phone", 2)
	want("after evictions and the sender's ack", 150, 0)
	for i := 1; i <= 30; i++ {
		le.callOK(202, "POST", "/v1/read", le.token(members[i], "d"), map[string]any{"receipts": []map[string]any{{"conv_id": "big", "seq": 2}}}, nil)
	}
	le.callOK(202, "POST", "/v1/read", le.token(members[151], "d"), map[string]any{"receipts": []map[string]any{{"conv_id": "big", "seq": 2}}}, nil)
	want("after 31 reads", 151, 31)
	// A member who leaves is no longer counted.
	le.produce(&schemas.Message{ClientMsgId: "leave-1", ConvId: "big", ConvType: schemas.ConvType_CONV_TYPE_GROUP,
		Sender: members[1], Kind: schemas.Kind_KIND_MEMBER_LEAVE, Recipients: []string{members[1]}})
	eventually(t, "the leave is counted", func() (bool, string) {
		rc := counts()
		return *rc.Members == 198 && *rc.Delivered == 150 && *rc.Read == 30, fmt.Sprintf("%+v", rc)
	})
}
