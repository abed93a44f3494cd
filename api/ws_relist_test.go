package api

import (
	"context"
	"fmt"
	"sort"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	obclient "github.com/offlinebox/offlinebox/client"
	"github.com/offlinebox/offlinebox/live"
)

// TestConversationsRelistedPastTheCatchUpQueueAreNamedInOneNotice: a
// device is online while its user is added to ten groups, but its node's
// bus connection is down, so the push stage's word to listen to them
// reaches nobody there. Once the bus is back the node reads the device's
// conversations again and follows each, but the catch-up queue has room
// for few of them (held here: one slot, and the workers busy with their
// first). The device gets one notice naming every group that did not
// fit, not a notice per group; the groups that fit are caught up by push
// (the founding and the message); and only those count as relisted.
func TestConversationsRelistedPastTheCatchUpQueueAreNamedInOneNotice(t *testing.T) {
	le := newLiveEnv(t, Config{})
	bus := le.busDropper(1)
	hub := le.nodes[1].server.live
	hub.Probe().SetCatchUpQueue(1) // before the hub starts its workers
	_, release := le.holdSubscriptions(1)
	dave := le.device(0, "dave", "phone")
	carol := le.device(1, "carol", "phone")
	dave.connect()
	carol.connect()

	bus.drop()
	const groups = 10
	var texts []string
	for i := range groups {
		conv := fmt.Sprintf("g%d", i)
		le.produce(founding(conv, "erin", "dave", "carol"), textMsg(conv, conv+"-1", "erin"))
		texts = append(texts, conv+"-1")
	}
	dave.pushedAll(texts...)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	eventually(t, "carol's list has every group", func() (bool, string) {
		list, _, err := carol.http.Conversations(ctx, 50)
		return err == nil && len(list.Conversations) == groups, fmt.Sprint(len(list.Conversations), " listed, ", err)
	})
	bus.release()

	notice := carol.until("notice", func(obclient.Frame) bool { return true })
	named, fit := carol.namedOrPushed(notice, "the relist's", groups, -1, release, func(conv string) []string {
		return []string{conv + "-create", conv + "-1"}
	})
	if got := testutil.ToFloat64(hub.Probe().Relisted()); got != float64(len(fit)) {
		t.Errorf("relisted conversations counted %v, want %d: those caught up (%v)", got, len(fit), fit)
	}
	if got := testutil.ToFloat64(hub.Probe().Fallbacks().WithLabelValues("catch_up_full")); got != float64(len(named)) {
		t.Errorf("catch-ups counted as not fitting the queue %v, want %d: those named", got, len(named))
	}
	le.listensToEveryGroup(carol, groups)
}

// namedOrPushed checks what d gets after one notice for groups g0 … g(n-1)
// whose catch-ups did not all fit the held queue: nothing more while the
// catch-ups wait; a notice naming at least those the queue could not take,
// each up to seq 2 of its epoch, none acked (and unread as given, when not
// negative), its total theirs; then, once release lets the catch-ups run,
// each group not named pushed want(conv), once, in order, and nothing
// else. It returns the groups named and those pushed (sorted).
func (d *device) namedOrPushed(notice obclient.Frame, which string, n, unread int, release func(), want func(conv string) []string) (map[string]bool, []string) {
	t := d.t
	t.Helper()
	for _, f := range d.quiet(time.Second, "ping", "receipt") {
		t.Errorf("after %s notice %s got a %s frame %s, want nothing while the catch-ups wait", which, d.user, f.Type, f.Raw)
	}
	named := map[string]bool{}
	for _, nc := range notice.Conversations {
		if nc.MaxSeq != 2 || nc.DeviceAckedSeq != 0 || nc.Epoch == 0 || (unread >= 0 && nc.Unread != uint64(unread)) {
			t.Errorf("the notice names %+v, want %s up to seq 2 of its epoch, none acked (unread %d, unless negative)", nc, nc.ConvID, unread)
		}
		named[nc.ConvID] = true
	}
	// At most the four held workers' and the queue's one fit.
	if len(named) < n-live.CatchUpWorkers-1 || notice.Truncated || notice.Total == nil || notice.Total.Conversations != len(named) {
		t.Fatalf("%s's notice is %s, want one naming at least %d groups, its total theirs", d.user, notice.Raw, n-live.CatchUpWorkers-1)
	}

	release()
	pushed := map[string][]string{}
	for _, f := range d.quiet(2*time.Second, "ping", "receipt") {
		if f.Type != "message" {
			t.Fatalf("once the catch-ups ran %s got a %s frame %s, want only their pushes", d.user, f.Type, f.Raw)
		}
		pushed[f.Message.ConvID] = append(pushed[f.Message.ConvID], f.Message.ClientMsgID)
	}
	var fit []string
	for i := range n {
		conv := fmt.Sprintf("g%d", i)
		got, w := pushed[conv], fmt.Sprint(want(conv))
		if named[conv] == (len(got) > 0) || (len(got) > 0 && fmt.Sprint(got) != w) {
			t.Errorf("%s: named %v, pushed %v; want either named or pushed %s, each once, in order", conv, named[conv], got, w)
		}
		if len(got) > 0 {
			fit = append(fit, conv)
		}
	}
	sort.Strings(fit)
	return named, fit
}
