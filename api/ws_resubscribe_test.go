package api

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	obclient "github.com/offlinebox/offlinebox/client"
)

// TestConversationsResubscribedPastTheCatchUpQueueAreNamedInOneNotice: a
// device listens to ten groups when its node's bus connection drops, and
// a message to each is published meanwhile, reaching nobody there. Once
// go-redis resubscribed, every group's listener catches up, but the
// catch-up queue has room for few of them (held here: one slot, and the
// workers busy with their first). The device gets one notice naming
// every group that did not fit, with its counters, not a notice to sync
// per group; the groups that fit are caught up by push; and each group
// that did not fit counts as a catch_up_full fallback.
func TestConversationsResubscribedPastTheCatchUpQueueAreNamedInOneNotice(t *testing.T) {
	le := newLiveEnv(t, Config{})
	bus := le.busDropper(1)
	hub := le.nodes[1].server.live
	hub.Probe().SetCatchUpQueue(1)        // before the hub starts its workers
	_, release := le.holdSubscriptions(1) // the connect below subscribes without a worker
	const groups = 10
	for i := range groups {
		le.produce(founding(fmt.Sprintf("g%d", i), "erin", "dave", "carol"))
	}
	dave := le.device(0, "dave", "phone")
	carol := le.device(1, "carol", "phone")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	eventually(t, "carol's list has every group", func() (bool, string) {
		list, _, err := carol.http.Conversations(ctx, 50)
		return err == nil && len(list.Conversations) == groups, fmt.Sprint(len(list.Conversations), " listed, ", err)
	})
	dave.connect()
	if _, n := carol.connect(); len(n.Conversations) != groups {
		t.Fatalf("carol's notice on connect is %s, want every group", n.Raw)
	}

	bus.drop()
	var texts []string
	for i := range groups {
		conv := fmt.Sprintf("g%d", i)
		le.produce(textMsg(conv, conv+"-1", "erin"))
		texts = append(texts, conv+"-1")
	}
	dave.pushedAll(texts...) // published: the other node's bus stayed up
	bus.release()

	notice := carol.until("notice", func(obclient.Frame) bool { return true })
	named, fit := carol.namedOrPushed(notice, "the resubscription's", groups, 1, release, func(conv string) []string {
		return []string{conv + "-1"}
	})
	if got := testutil.ToFloat64(hub.Probe().Fallbacks().WithLabelValues("catch_up_full")); got != float64(len(named)) {
		t.Errorf("catch-ups counted as not fitting the queue %v, want %d: those named, not those caught up (%v)", got, len(named), fit)
	}
	le.listensToEveryGroup(carol, groups)
}
