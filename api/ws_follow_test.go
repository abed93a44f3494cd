package api

import (
	"fmt"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/offlinebox/offlinebox/live"
	"github.com/offlinebox/offlinebox/schemas"
)

// TestConversationsFollowedPastTheCatchUpQueueAreNamedToTheDevice: a
// device is online while its user is added to ten groups; each join
// makes its connection follow the group and catch up on it, but the
// catch-up queue has room for few of them (held here: one slot, and the
// workers busy with their first). The groups that did not fit are named
// to the device in notices with their counters (never a bare "sync
// everything") and each counts as a catch_up_full fallback; the
// connection keeps listening to every group, so that what is sent to
// each afterwards is pushed, once.
func TestConversationsFollowedPastTheCatchUpQueueAreNamedToTheDevice(t *testing.T) {
	le := newLiveEnv(t, Config{})
	hub := le.nodes[1].server.live
	hub.Probe().SetCatchUpQueue(1) // before the hub starts its workers
	_, release := le.holdSubscriptions(1)
	dave := le.device(0, "dave", "phone")
	carol := le.device(1, "carol", "phone")
	dave.connect()
	carol.connect()

	const groups = 10
	var created []string
	for i := range groups {
		conv := fmt.Sprintf("g%d", i)
		le.produce(founding(conv, "erin", "dave"))
		created = append(created, conv+"-create")
	}
	dave.pushedAll(created...)
	joins := make([]*schemas.Message, 0, groups)
	for i := range groups {
		conv := fmt.Sprintf("g%d", i)
		joins = append(joins, &schemas.Message{ClientMsgId: conv + "-carol", ConvId: conv, ConvType: schemas.ConvType_CONV_TYPE_GROUP,
			Sender: "erin", Kind: schemas.Kind_KIND_MEMBER_JOIN, Recipients: []string{"carol"}})
	}
	le.produce(joins...)

	// Until the catch-ups are let go, notices only, naming each group
	// that did not fit up to seq 2 of its epoch, none acked.
	named := map[string]bool{}
	for _, f := range carol.quiet(2*time.Second, "ping", "receipt") {
		if f.Type != "notice" || f.Truncated {
			t.Fatalf("while the catch-ups wait carol got %s, want notices naming the groups", f.Raw)
		}
		for _, nc := range f.Conversations {
			if nc.MaxSeq != 2 || nc.DeviceAckedSeq != 0 || nc.Epoch == 0 {
				t.Errorf("a notice names %+v, want %s up to seq 2 of its epoch, none acked", nc, nc.ConvID)
			}
			named[nc.ConvID] = true
		}
	}
	// At most the four held workers' and the queue's one fit.
	if len(named) < groups-live.CatchUpWorkers-1 {
		t.Fatalf("the notices name %d groups, want at least %d", len(named), groups-live.CatchUpWorkers-1)
	}

	release()
	le.listensToEveryGroup(carol, groups)
	if got := testutil.ToFloat64(hub.Probe().Fallbacks().WithLabelValues("catch_up_full")); got != float64(len(named)) {
		t.Errorf("catch-ups counted as not fitting the queue %v, want %d: those named", got, len(named))
	}
}

// listensToEveryGroup checks that d listens to groups g0 … g(n-1), those
// a full catch-up queue left to the pull too: a message sent to each is
// pushed to d, once.
func (le *liveEnv) listensToEveryGroup(d *device, n int) {
	d.t.Helper()
	var after []string
	for i := range n {
		conv := fmt.Sprintf("g%d", i)
		le.produce(textMsg(conv, conv+"-after", "erin"))
		after = append(after, conv+"-after")
	}
	d.pushedAll(after...)
	for _, f := range d.quiet(time.Second, "ping", "receipt") {
		d.t.Errorf("after every group's message was pushed %s got %s, want nothing more", d.user, f.Raw)
	}
}
