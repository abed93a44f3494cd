package api

import (
	"context"
	"fmt"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	obclient "github.com/offlinebox/offlinebox/client"
	"github.com/offlinebox/offlinebox/internal/testenv"
	"github.com/offlinebox/offlinebox/live"
	"github.com/offlinebox/offlinebox/schemas"
)

// holdSubscriptions makes node n's catch-ups wait before they subscribe a
// conversation's channel until the returned release is called: what the
// push stage publishes on the channel meanwhile reaches nobody there.
// reached names each conversation held.
func (le *liveEnv) holdSubscriptions(n int) (reached <-chan string, release func()) {
	got := make(chan string, 16)
	gate := make(chan struct{})
	var once sync.Once
	release = func() { once.Do(func() { close(gate) }) }
	le.t.(*testing.T).Cleanup(release)
	le.nodes[n].server.live.Probe().BeforeSubscribe(func(conv string) {
		got <- conv
		<-gate
	})
	return got, release
}

// messagesUntilQuiet reads frames until none came for a second and
// returns the client ids of the messages of conv, in the order pushed.
func (d *device) messagesUntilQuiet(conv string) []string {
	d.t.Helper()
	var ids []string
	for _, f := range d.quiet(time.Second, "ping", "receipt") {
		if f.Type == "message" && f.Message.ConvID == conv {
			ids = append(ids, f.Message.ClientMsgID)
		}
	}
	return ids
}

func waitReached(t *testing.T, reached <-chan string, conv string) {
	t.Helper()
	select {
	case got := <-reached:
		if got != conv {
			t.Fatalf("the node subscribes %s, want %s", got, conv)
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("the node never started listening to %s", conv)
	}
}

// TestRecordsPublishedBeforeAJoiningNodeSubscribedArePushedOnceInOrder:
// a member joins a group, or a direct conversation starts, and the next
// records go out on the conversation's channel before the node of the
// member's device is subscribed to it (held there, deterministically).
// The node reads what it missed from the store once its subscription
// took: the device gets every record by push, once each, in seq order;
// and what comes after on the channel as well.
func TestRecordsPublishedBeforeAJoiningNodeSubscribedArePushedOnceInOrder(t *testing.T) {
	for _, tc := range []struct {
		name, conv string
		// before runs ahead of the observer's connection.
		before func(le *liveEnv)
		// change makes carol a member (her node is told by name).
		change func(le *liveEnv)
		// msg is the i-th record after the change.
		msg      func(i int) *schemas.Message
		observer string // another member, on the other node
		// first: the change itself is carol's first message.
		first string
		// threshold: the large group threshold (0: the default).
		threshold int
	}{
		{
			name: "a member joins a group", conv: "crew", observer: "dave",
			before: func(le *liveEnv) { le.produce(founding("crew", "erin", "dave")) },
			change: func(le *liveEnv) {
				le.produce(&schemas.Message{ClientMsgId: "crew-carol-joins", ConvId: "crew", ConvType: schemas.ConvType_CONV_TYPE_GROUP,
					Sender: "erin", Kind: schemas.Kind_KIND_MEMBER_JOIN, Recipients: []string{"carol"}})
			},
			msg: func(i int) *schemas.Message { return textMsg("crew", fmt.Sprintf("crew-%d", i), "erin") },
		},
		{
			name: "a member joins a large group", conv: "crowd", observer: "dave", threshold: 3,
			before: func(le *liveEnv) { le.produce(founding("crowd", "erin", "dave", "frank", "gina")) },
			change: func(le *liveEnv) {
				le.produce(&schemas.Message{ClientMsgId: "crowd-carol-joins", ConvId: "crowd", ConvType: schemas.ConvType_CONV_TYPE_GROUP,
					Sender: "erin", Kind: schemas.Kind_KIND_MEMBER_JOIN, Recipients: []string{"carol"}})
			},
			msg:   func(i int) *schemas.Message { return textMsg("crowd", fmt.Sprintf("crowd-%d", i), "erin") },
			first: "crowd-carol-joins",
		},
		{
			name: "a direct conversation starts", conv: "dm-carol-erin", observer: "erin",
			before: func(le *liveEnv) {},
			change: func(le *liveEnv) { le.produce(textMsg("dm-carol-erin", "dm-0", "erin", toPeer("carol"))) },
			msg: func(i int) *schemas.Message {
				return textMsg("dm-carol-erin", fmt.Sprintf("dm-%d", i), "erin", toPeer("carol"))
			},
			first: "dm-0",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			le := newLiveEnvOpts(t, envOptions{threshold: tc.threshold})
			reached, release := le.holdSubscriptions(1)
			tc.before(le)
			observer := le.device(0, tc.observer, "phone")
			carol := le.device(1, "carol", "phone")
			observer.connect()
			carol.connect()

			tc.change(le)
			waitReached(t, reached, tc.conv)
			var want []string
			if tc.first != "" {
				want = append(want, tc.first)
			}
			var next []string
			for i := 1; i <= 3; i++ {
				m := tc.msg(i)
				le.produce(m)
				next = append(next, m.ClientMsgId)
			}
			// The channel carried them, to the observer's node, while
			// carol's node was not subscribed.
			observer.pushedAll(next...)
			release()
			want = append(want, next...)
			if got := carol.messagesUntilQuiet(tc.conv); fmt.Sprint(got) != fmt.Sprint(want) {
				t.Fatalf("carol was pushed %v, want %v: each once, in order", got, want)
			}

			after := tc.msg(4)
			le.produce(after)
			if got := carol.messagesUntilQuiet(tc.conv); len(got) != 1 || got[0] != after.ClientMsgId {
				t.Fatalf("after the catch-up carol was pushed %v, want only %s, from the channel", got, after.ClientMsgId)
			}
		})
	}
}

// TestAJoinerMissingMoreThanAReplayIsToldToPull: more than ReplayMax
// records went out before the joiner's node subscribed; the device gets a
// notice naming the conversation (to pull with sync) instead of a long
// push, and what follows is pushed.
func TestAJoinerMissingMoreThanAReplayIsToldToPull(t *testing.T) {
	le := newLiveEnv(t, Config{Live: LiveConfig{ReplayMax: 3}})
	reached, release := le.holdSubscriptions(1)
	le.produce(founding("crew", "erin", "dave"))
	dave := le.device(0, "dave", "phone")
	carol := le.device(1, "carol", "phone")
	dave.connect()
	carol.connect()
	le.produce(&schemas.Message{ClientMsgId: "crew-carol-joins", ConvId: "crew", ConvType: schemas.ConvType_CONV_TYPE_GROUP,
		Sender: "erin", Kind: schemas.Kind_KIND_MEMBER_JOIN, Recipients: []string{"carol"}})
	waitReached(t, reached, "crew")
	var ids []string
	for i := 1; i <= 5; i++ {
		m := textMsg("crew", fmt.Sprintf("crew-%d", i), "erin")
		le.produce(m)
		ids = append(ids, m.ClientMsgId)
	}
	dave.pushedAll(ids...)
	release()
	var notice obclient.Frame
	var pushed []string
	for _, f := range carol.quiet(time.Second, "ping", "receipt") {
		switch f.Type {
		case "notice":
			notice = f
		case "message":
			pushed = append(pushed, f.Message.ClientMsgID)
		}
	}
	if len(pushed) != 0 || len(notice.Conversations) != 1 {
		t.Fatalf("carol was pushed %v and noticed %s, want no push and a notice of crew", pushed, notice.Raw)
	}
	if nc := notice.Conversations[0]; nc.ConvID != "crew" || nc.MaxSeq != 7 || nc.DeviceAckedSeq != 0 || nc.Unread != 5 || notice.Total.Conversations != 1 {
		t.Fatalf("carol's notice is %s, want crew up to seq 7 with 5 unread", notice.Raw)
	}
	le.produce(textMsg("crew", "crew-6", "erin"))
	if got := carol.messagesUntilQuiet("crew"); len(got) != 1 || got[0] != "crew-6" {
		t.Fatalf("after the notice carol was pushed %v, want crew-6", got)
	}
}

// busDropper cuts node n's bus connection and holds its reconnection, as
// a Redis restart or a network blip would: go-redis redials and
// resubscribes by itself only once released, and what is published
// meanwhile reaches nobody on that node. It must be made before the node
// has a connection (its hub subscribes on the first).
type busDropper struct {
	t       *testing.T
	rdb     *redis.Client
	name    string
	mu      sync.Mutex
	gate    chan struct{} // nil: dials go through
	reached chan struct{}
}

func (le *liveEnv) busDropper(n int) *busDropper {
	t := le.t.(*testing.T)
	d := &busDropper{t: t, name: fmt.Sprintf("bus-of-node-%d", n), reached: make(chan struct{}, 1)}
	var dialer net.Dialer
	d.rdb = redis.NewClient(&redis.Options{Addr: testenv.RedisAddr(t), ClientName: d.name, DialTimeout: time.Minute,
		Dialer: func(ctx context.Context, network, addr string) (net.Conn, error) {
			d.mu.Lock()
			gate := d.gate
			d.mu.Unlock()
			if gate != nil {
				select {
				case d.reached <- struct{}{}:
				default:
				}
				select {
				case <-gate:
				case <-ctx.Done():
					return nil, ctx.Err()
				}
			}
			return dialer.DialContext(ctx, network, addr)
		}})
	t.Cleanup(func() { _ = d.rdb.Close() })
	t.Cleanup(d.release)
	h := le.nodes[n].server.live
	h.Probe().SetBus(live.NewBus(d.rdb, le.store.Config().CallTimeout))
	return d
}

// drop closes the bus's pub/sub connection and returns once go-redis is
// redialling, held until release.
func (d *busDropper) drop() {
	d.t.Helper()
	d.mu.Lock()
	d.gate = make(chan struct{})
	d.mu.Unlock()
	if testenv.KillPubSubClients(d.t, d.rdb, d.name) == 0 {
		d.t.Fatal("the node's bus has no pub/sub connection to close")
	}
	select {
	case <-d.reached:
	case <-time.After(30 * time.Second):
		d.t.Fatal("the node's bus never redialled")
	}
}

func (d *busDropper) release() {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.gate != nil {
		close(d.gate)
		d.gate = nil
	}
}

// TestRecordsPublishedWhileTheBusWasDownArePushedOnceInOrder: a device
// is online and listening to a group; its node's bus connection drops
// and, while it redials, records are stored and published, reaching
// nobody there. Once go-redis resubscribed, the node reads what the
// device lacks: a few come by push, each once and in seq order; more
// than a replay come as a notice naming the conversation; what follows
// comes from the channel again.
func TestRecordsPublishedWhileTheBusWasDownArePushedOnceInOrder(t *testing.T) {
	for _, tc := range []struct {
		name      string
		replayMax int
		missed    int
		notice    bool
	}{
		{name: "a few missed are pushed", replayMax: 20, missed: 3},
		{name: "more than a replay missed is a notice", replayMax: 3, missed: 5, notice: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			le := newLiveEnv(t, Config{Live: LiveConfig{ReplayMax: tc.replayMax}})
			bus := le.busDropper(1)
			le.produce(founding("crew", "erin", "dave", "carol"))
			dave := le.device(0, "dave", "phone")
			carol := le.device(1, "carol", "phone")
			dave.connect()
			carol.connect()
			le.produce(textMsg("crew", "crew-0", "erin"))
			carol.pushedAll("crew-0")
			dave.pushedAll("crew-0")

			bus.drop()
			var missed []string
			for i := 1; i <= tc.missed; i++ {
				m := textMsg("crew", fmt.Sprintf("crew-%d", i), "erin")
				le.produce(m)
				missed = append(missed, m.ClientMsgId)
			}
			// Published: the other node, whose bus stayed up, pushed them.
			dave.pushedAll(missed...)
			bus.release()

			var pushed []string
			var notices []obclient.Frame
			for _, f := range carol.quiet(2*time.Second, "ping", "receipt") {
				switch {
				case f.Type == "notice":
					notices = append(notices, f)
				case f.Type == "message" && f.Message.ConvID == "crew":
					pushed = append(pushed, f.Message.ClientMsgID)
				}
			}
			if tc.notice {
				if len(pushed) != 0 || len(notices) != 1 || len(notices[0].Conversations) != 1 || notices[0].Conversations[0].ConvID != "crew" {
					t.Fatalf("after the bus came back carol was pushed %v and noticed %v, want no push and one notice of crew", pushed, notices)
				}
				if nc := notices[0].Conversations[0]; nc.MaxSeq != uint64(2+tc.missed) {
					t.Fatalf("carol's notice is %s, want crew up to seq %d", notices[0].Raw, 2+tc.missed)
				}
			} else if fmt.Sprint(pushed) != fmt.Sprint(missed) || len(notices) != 0 {
				t.Fatalf("after the bus came back carol was pushed %v (notices %v), want %v: each once, in order", pushed, notices, missed)
			}

			after := textMsg("crew", "crew-after", "erin")
			le.produce(after)
			if got := carol.messagesUntilQuiet("crew"); len(got) != 1 || got[0] != after.ClientMsgId {
				t.Fatalf("after the catch-up carol was pushed %v, want only %s, from the channel", got, after.ClientMsgId)
			}
		})
	}
}

// A node decides a channel has no listener under its lock and
// unsubscribes after it, so a connection may start listening in between,
// its subscription finding the channel still there. The removal then
// leaves that listener caught up again and the channel subscribed anew:
// what is sent afterwards still reaches it.
func TestAListenerThatCameWhileItsChannelWasDroppedKeepsReceiving(t *testing.T) {
	le := newLiveEnv(t, Config{})
	le.produce(founding("crew", "erin", "carol"))
	carol := le.device(1, "carol", "phone")
	carol.connect()
	le.produce(textMsg("crew", "crew-0", "erin"))
	carol.pushedAll("crew-0")

	// The removal a connection leaving crew decided before carol listened.
	hub := le.nodes[1].server.live
	if err := hub.Probe().DropChannels(context.Background(), "crew"); err != nil {
		t.Fatal(err)
	}
	after := textMsg("crew", "crew-after", "erin")
	le.produce(after)
	if got := carol.messagesUntilQuiet("crew"); len(got) != 1 || got[0] != after.ClientMsgId {
		t.Fatalf("after the channel was dropped under her carol was pushed %v, want %s", got, after.ClientMsgId)
	}
}

// TestAJoinWhileTheNodesBusWasDownIsListenedToOnceItIsBack: a device is
// online when its user is added to a group, but its node's bus
// connection is down, so the push stage's word to that node by name (the
// join: listen to the group) reaches nobody. Once go-redis resubscribed
// the node's own channel, the node reads its connections' conversations
// again: the device listens to the group, is pushed what it missed, once
// each and in order, and what follows from the channel.
func TestAJoinWhileTheNodesBusWasDownIsListenedToOnceItIsBack(t *testing.T) {
	le := newLiveEnv(t, Config{})
	bus := le.busDropper(1)
	le.produce(founding("crew", "erin", "dave"))
	dave := le.device(0, "dave", "phone")
	carol := le.device(1, "carol", "phone")
	dave.connect()
	carol.connect()

	bus.drop()
	le.produce(&schemas.Message{ClientMsgId: "crew-carol-joins", ConvId: "crew", ConvType: schemas.ConvType_CONV_TYPE_GROUP,
		Sender: "erin", Kind: schemas.Kind_KIND_MEMBER_JOIN, Recipients: []string{"carol"}})
	missed := textMsg("crew", "crew-1", "erin")
	le.produce(missed)
	dave.pushedAll(missed.ClientMsgId)
	bus.release()

	if got := carol.messagesUntilQuiet("crew"); len(got) != 1 || got[0] != missed.ClientMsgId {
		t.Fatalf("after the bus came back carol was pushed %v, want %s", got, missed.ClientMsgId)
	}
	after := textMsg("crew", "crew-after", "erin")
	le.produce(after)
	if got := carol.messagesUntilQuiet("crew"); len(got) != 1 || got[0] != after.ClientMsgId {
		t.Fatalf("then carol was pushed %v, want only %s, from the channel", got, after.ClientMsgId)
	}
}
