package api

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/protobuf/proto"

	obclient "github.com/offlinebox/offlinebox/client"
	"github.com/offlinebox/offlinebox/live"
	"github.com/offlinebox/offlinebox/schemas"
)

const liveDM = "dm-alice-bob"

// TestPushReachesOnlineDevicesOnBothNodesAndTheSenderSeesDeliveredThenRead
// is the confirmed-delivery story: bob's phone on one node and his laptop
// on the other both get alice's message pushed; the phone stores and
// acks; alice's live channel shows "delivered", and after bob reads,
// "read"; bob's tablet, offline meanwhile, connects later, is told of the
// conversation and pulls exactly what it lacked.
func TestPushReachesOnlineDevicesOnBothNodesAndTheSenderSeesDeliveredThenRead(t *testing.T) {
	le := newLiveEnv(t, Config{})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	le.produce(textMsg(liveDM, "dm-1", "alice", toPeer("bob")))

	tablet := le.device(1, "bob", "tablet")
	var first obclient.SyncResponse
	eventually(t, "the first message reaches the tablet by sync", func() (bool, string) {
		var err error
		first, _, err = tablet.http.Sync(ctx, obclient.SyncRequest{})
		return err == nil && len(first.Conversations) == 1 && len(first.Conversations[0].Messages) == 1, fmt.Sprint(first, err)
	})
	epoch := first.Conversations[0].Epoch
	if err := tablet.http.Ack(ctx, []obclient.AckItem{{ConvID: liveDM, Seq: 1, Epoch: epoch}}); err != nil {
		t.Fatal(err)
	}

	alice := le.device(0, "alice", "phone")
	phone := le.device(0, "bob", "phone")
	laptop := le.device(1, "bob", "laptop")
	alice.connect()
	_, phoneNotice := phone.connect()
	if phoneNotice.Replay || len(phoneNotice.Conversations) != 1 || phoneNotice.Conversations[0].ConvID != liveDM {
		t.Fatalf("the phone's notice is %s, want the conversation it never acked", phoneNotice.Raw)
	}
	laptop.connect()

	if err := alice.http.Send(ctx, obclient.Outgoing{ClientMsgID: "dm-2", ConvID: liveDM, ConvType: "direct",
		Recipients: []string{"bob"}, ContentType: "text/plain", Body: []byte("the schedule is confirmed")}); err != nil {
		t.Fatal(err)
	}
	isDM2 := func(f obclient.Frame) bool { return f.Message != nil && f.Message.ClientMsgID == "dm-2" }
	for _, d := range []*device{phone, laptop} {
		f := d.until("message", isDM2)
		if f.Message.Seq != 2 || f.Message.Epoch != epoch || f.Attempt != 1 || string(f.Message.Body) != "the schedule is confirmed" {
			t.Fatalf("%s got %s, want seq 2 of epoch %d, first attempt", d.name, f.Raw, epoch)
		}
	}
	// Alice's own device learns the seq of what she sent.
	alice.until("message", isDM2)

	if err := phone.live.Ack(ctx, []obclient.AckItem{{ConvID: liveDM, Seq: 2, Epoch: epoch}}, true); err != nil {
		t.Fatal(err)
	}
	if a := phone.next("acked"); a.Acked != 1 {
		t.Fatalf("the phone's ack was answered %s", a.Raw)
	}
	delivered := alice.until("receipt", func(f obclient.Frame) bool { return f.ConvID == liveDM && f.Seq == 2 && f.PeerDeliveredSeq >= 2 })
	if delivered.Seq != 2 || delivered.Delivered != 1 || delivered.Members != 1 || delivered.PeerReadSeq != 0 {
		t.Fatalf("alice's delivered receipt is %s", delivered.Raw)
	}
	if err := laptop.http.Read(ctx, []obclient.AckItem{{ConvID: liveDM, Seq: 2}}); err != nil {
		t.Fatal(err)
	}
	read := alice.until("receipt", func(f obclient.Frame) bool { return f.ConvID == liveDM && f.Seq == 2 && f.PeerReadSeq >= 2 })
	if read.Read != 1 || read.Seq != 2 {
		t.Fatalf("alice's read receipt is %s", read.Raw)
	}
	var rc receiptsJSON
	le.callOK(200, "GET", "/v1/conversations/"+liveDM+"/receipts?seq=2", le.token("alice", "phone"), nil, &rc)
	if rc.State != StateRead || *rc.Delivered != 1 || *rc.Read != 1 || *rc.Members != 1 || rc.Sender != "alice" ||
		rc.PeerReadSeq == nil || *rc.PeerReadSeq != 2 {
		t.Fatalf("receipts of seq 2: %+v", rc)
	}

	// The conversation list and sync show alice the peer's cursors.
	var list conversationListJSON
	le.callOK(200, "GET", "/v1/conversations", le.token("alice", "phone"), nil, &list)
	if len(list.Conversations) != 1 || list.Conversations[0].PeerDeliveredSeq == nil ||
		*list.Conversations[0].PeerDeliveredSeq != 2 || *list.Conversations[0].PeerReadSeq != 2 {
		t.Fatalf("alice's conversation list is %+v, want the peer's delivered and read seq 2", list)
	}
	var sy struct {
		Conversations []syncConvJSON `json:"conversations"`
	}
	le.callOK(200, "POST", "/v1/sync", le.token("alice", "phone"), map[string]any{}, &sy)
	if len(sy.Conversations) != 1 || sy.Conversations[0].PeerReadSeq == nil || *sy.Conversations[0].PeerReadSeq != 2 {
		t.Fatalf("alice's sync is %+v, want the peer's read seq 2", sy)
	}

	// The tablet was offline meanwhile: its notice names the conversation
	// from what it acked, and sync brings exactly the message it lacks.
	_, notice := tablet.connect()
	if notice.Replay || len(notice.Conversations) != 1 {
		t.Fatalf("the tablet's notice is %s, want one conversation to pull", notice.Raw)
	}
	nc := notice.Conversations[0]
	if nc.ConvID != liveDM || nc.Epoch != epoch || nc.MaxSeq != 2 || nc.DeviceAckedSeq != 1 || notice.Total.Conversations != 1 {
		t.Fatalf("the tablet's notice is %s, want %s max 2 acked 1", notice.Raw, liveDM)
	}
	got, _, err := tablet.http.Sync(ctx, obclient.SyncRequest{Cursors: map[string]obclient.Cursor{liveDM: {Seq: nc.DeviceAckedSeq, Epoch: nc.Epoch}}})
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Conversations) != 1 || len(got.Conversations[0].Messages) != 1 || got.Conversations[0].Messages[0].ClientMsgID != "dm-2" {
		t.Fatalf("the tablet's sync is %+v, want dm-2 alone", got)
	}
}

// TestSenderIsToldOfARecordThePipelineRefused: a dead-lettered record
// shows to its sender as rejected, by its public code and sentence.
func TestSenderIsToldOfARecordThePipelineRefused(t *testing.T) {
	le := newLiveEnv(t, Config{})
	alice := le.device(0, "alice", "phone")
	alice.connect()
	bad := founding("team", "alice", "bob")
	bad.Qos = schemas.QoS_QOS_AT_MOST_ONCE // a membership change cannot be at-most-once
	le.produce(bad)
	f := alice.until("rejected", func(obclient.Frame) bool { return true })
	if f.ConvID != "team" || f.ClientMsgID != "team-create" || f.Code != schemas.RefusalInvalid || f.Reason != schemas.RefusalSentence(schemas.RefusalInvalid) || f.AtMS == 0 {
		t.Fatalf("the rejection is %s", f.Raw)
	}
}

// TestShortAbsenceWithFewMissedIsReplayedOnTheSocket: a device back within
// the offline threshold that missed few messages gets them pushed after a
// notice that says so, instead of being sent to sync.
func TestShortAbsenceWithFewMissedIsReplayedOnTheSocket(t *testing.T) {
	le := newLiveEnv(t, Config{Live: LiveConfig{OfflineThreshold: time.Minute, ReplayMax: 3}})
	bob := le.device(0, "bob", "phone")
	bob.connect()
	le.produce(textMsg(liveDM, "dm-1", "alice", toPeer("bob")))
	f := bob.until("message", func(f obclient.Frame) bool { return f.Message.ClientMsgID == "dm-1" })
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := bob.live.Ack(ctx, []obclient.AckItem{{ConvID: liveDM, Seq: 1, Epoch: f.Message.Epoch}}, true); err != nil {
		t.Fatal(err)
	}
	bob.next("acked")
	_ = bob.live.Close()
	time.Sleep(100 * time.Millisecond)
	le.produce(textMsg(liveDM, "dm-2", "alice", toPeer("bob")), textMsg(liveDM, "dm-3", "alice", toPeer("bob")))
	eventually(t, "both are sequenced", func() (bool, string) {
		var list conversationListJSON
		le.callOK(200, "GET", "/v1/conversations", le.token("alice", "phone"), nil, &list)
		return len(list.Conversations) == 1 && list.Conversations[0].LastSeq == 3, ""
	})
	_, notice := bob.connect()
	if !notice.Replay || len(notice.Conversations) != 1 || notice.Conversations[0].DeviceAckedSeq != 1 || notice.Conversations[0].MaxSeq != 3 {
		t.Fatalf("notice %s, want a replay of %s from 1 to 3", notice.Raw, liveDM)
	}
	for _, want := range []string{"dm-2", "dm-3"} {
		if m := bob.next("message"); m.Message.ClientMsgID != want {
			t.Fatalf("replayed %s, want %s", m.Raw, want)
		}
	}
	// Away longer than the threshold: a notice to pull instead.
	le2 := newLiveEnv(t, Config{Live: LiveConfig{OfflineThreshold: time.Millisecond}})
	carol := le2.device(0, "bob", "phone")
	le2.produce(textMsg(liveDM, "dm-1", "alice", toPeer("bob")))
	eventually(t, "the message is sequenced", func() (bool, string) {
		var list conversationListJSON
		le2.callOK(200, "GET", "/v1/conversations", le2.token("bob", "phone"), nil, &list)
		return len(list.Conversations) == 1, ""
	})
	carol.connect()
	_ = carol.live.Close()
	time.Sleep(50 * time.Millisecond)
	if _, n := carol.connect(); n.Replay {
		t.Fatalf("a device away past the threshold was replayed: %s", n.Raw)
	}
}

// TestLiveMetricsCountConnectionsPushesAndAcks: the series operators watch.
func TestLiveMetricsCountConnectionsPushesAndAcks(t *testing.T) {
	reg := prometheus.NewRegistry()
	le := newLiveEnvWith(t, Config{}, reg)
	bob := le.device(0, "bob", "phone")
	bob.connect()
	le.produce(textMsg(liveDM, "dm-1", "alice", toPeer("bob")))
	f := bob.until("message", func(f obclient.Frame) bool { return true })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := bob.live.Ack(ctx, []obclient.AckItem{{ConvID: liveDM, Seq: f.Message.Seq, Epoch: f.Message.Epoch}}, true); err != nil {
		t.Fatal(err)
	}
	bob.next("acked")
	got := map[string]float64{}
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			v := m.GetCounter().GetValue() + m.GetGauge().GetValue() + float64(m.GetHistogram().GetSampleCount())
			got[mf.GetName()] += v
		}
	}
	for name, min := range map[string]float64{
		"offlinebox_live_connections": 1, "offlinebox_live_pushes_total": 1, "offlinebox_live_acks_total": 1,
		"offlinebox_live_push_to_ack_seconds": 1, "offlinebox_live_notices_total": 1,
	} {
		if got[name] < min {
			t.Errorf("%s = %v, want at least %v", name, got[name], min)
		}
	}
	for _, name := range []string{"offlinebox_live_slow_consumer_closes_total", "offlinebox_live_receipts_sent_total",
		"offlinebox_live_heartbeat_closes_total", "offlinebox_live_ephemeral_dropped_total"} {
		if _, ok := got[name]; !ok {
			t.Errorf("%s is not registered", name)
		}
	}
}

// TestMembersOnlineBeforeTheirConversationExistedArePushedItsMessages:
// a device connected before a group or a direct conversation it is in was
// created learns of it from the first record, listens to its channel, and
// is pushed what follows (which the push stage sends once per
// conversation, not per member); the node stops a member who left from
// listening.
func TestMembersOnlineBeforeTheirConversationExistedArePushedItsMessages(t *testing.T) {
	le := newLiveEnv(t, Config{})
	carol := le.device(1, "carol", "phone")
	dave := le.device(0, "dave", "phone")
	carol.connect()
	dave.connect()
	le.produce(founding("crew", "erin", "carol", "dave"))
	for i := 1; i <= 3; i++ {
		le.produce(textMsg("crew", fmt.Sprintf("crew-%d", i), "erin"))
		le.produce(textMsg("dm-erin-carol", fmt.Sprintf("dm-%d", i), "erin", toPeer("carol")))
	}
	carol.pushedAll("crew-1", "crew-2", "crew-3", "dm-1", "dm-2", "dm-3")
	dave.pushedAll("crew-1", "crew-2", "crew-3")
	le.produce(&schemas.Message{ClientMsgId: "crew-dave-leaves", ConvId: "crew", ConvType: schemas.ConvType_CONV_TYPE_GROUP,
		Sender: "dave", Kind: schemas.Kind_KIND_MEMBER_LEAVE, Recipients: []string{"dave"}})
	le.produce(textMsg("crew", "crew-4", "erin"))
	carol.pushedAll("crew-4")
	for _, f := range dave.quiet(time.Second, "ping") {
		if f.Type == "message" && f.Message.ClientMsgID == "crew-4" {
			t.Fatalf("dave, who left, was pushed %s", f.Raw)
		}
	}
}

// pushedAll reads frames until every message named came (in any order:
// conversations are pushed apart).
func (d *device) pushedAll(ids ...string) {
	d.t.Helper()
	want := map[string]bool{}
	for _, id := range ids {
		want[id] = true
	}
	for len(want) > 0 {
		f := d.until("message", func(f obclient.Frame) bool { return f.Message != nil && want[f.Message.ClientMsgID] })
		delete(want, f.Message.ClientMsgID)
	}
}

// TestAChannelRecordFromBeforeAMemberJoinedIsNotPushedToThem: a device
// that connects after its user joined listens to the conversation from
// its notice; the push stage, running behind, may still carry records up
// to the join on the channel, and the node pushes none of those to it.
func TestAChannelRecordFromBeforeAMemberJoinedIsNotPushedToThem(t *testing.T) {
	le := newLiveEnv(t, Config{})
	le.produce(founding("crew", "erin", "dave"))
	le.produce(&schemas.Message{ClientMsgId: "crew-carol-joins", ConvId: "crew", ConvType: schemas.ConvType_CONV_TYPE_GROUP,
		Sender: "erin", Kind: schemas.Kind_KIND_MEMBER_JOIN, Recipients: []string{"carol"}})
	le.produce(textMsg("crew", "crew-1", "erin"))
	carol := le.device(1, "carol", "phone")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	eventually(t, "carol's join and the message after it are sequenced", func() (bool, string) {
		res, _, err := carol.http.Sync(ctx, obclient.SyncRequest{})
		return err == nil && len(res.Conversations) == 1 && len(res.Conversations[0].Messages) == 1, fmt.Sprint(res, err)
	})
	_, notice := carol.connect()
	if len(notice.Conversations) != 1 {
		t.Fatalf("notice %s, want crew", notice.Raw)
	}
	epoch := notice.Conversations[0].Epoch
	// What the channel would carry from a push stage behind: the join
	// (seq 2, not carol's to read) and the message after it (seq 3).
	for _, rec := range []*schemas.Sequenced{
		{Seq: 2, Epoch: epoch, Message: &schemas.Message{ClientMsgId: "crew-carol-joins", ConvId: "crew", ConvType: schemas.ConvType_CONV_TYPE_GROUP,
			Sender: "erin", Kind: schemas.Kind_KIND_MEMBER_JOIN, Recipients: []string{"carol"}}},
		{Seq: 3, Epoch: epoch, Message: textMsg("crew", "crew-1", "erin")},
	} {
		v, err := proto.Marshal(rec)
		if err != nil {
			t.Fatal(err)
		}
		data, err := live.Encode(live.Batch{Envelopes: []live.Envelope{{Kind: live.KindPush, Conv: "crew", Record: v}}})
		if err != nil {
			t.Fatal(err)
		}
		le.nodes[1].server.live.Probe().Dispatch(data)
	}
	f := carol.next("message")
	if f.Message.Seq != 3 {
		t.Fatalf("carol was pushed %s, want only seq 3, after her join", f.Raw)
	}
}
