package live

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"net/http"
	"net/url"
	"sync"
	"time"

	"github.com/coder/websocket"
	"github.com/twmb/franz-go/pkg/kgo"
	"google.golang.org/protobuf/proto"

	"github.com/offlinebox/offlinebox/auth"
	"github.com/offlinebox/offlinebox/edge"
	"github.com/offlinebox/offlinebox/redisstore"
	"github.com/offlinebox/offlinebox/redisstore/readpath"
	"github.com/offlinebox/offlinebox/schemas"
	"github.com/offlinebox/offlinebox/wire"
)

// liveRequest stands for a frame's request in error logs.
var liveRequest = &http.Request{Method: http.MethodGet, URL: &url.URL{Path: "/v1/live"}}

func newConnID() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

func (h *liveHub) runLive(ctx context.Context, ws *websocket.Conn, cork *corkConn, id auth.Identity, dev string) {
	c := h.openLive(ctx, ws, cork, id, dev)
	if c == nil {
		return
	}
	defer h.unregister(c)
	h.readLive(ctx, c)
	c.close(websocket.StatusNormalClosure, "")
}

// openLive registers the connection, queues hello, the notice and the
// replay and lets writes start; nil when the connection was closed. It
// returns before the connection's life of reads, so that its frames (the
// notice's and the replay's) are off the stack that idles in a read: a
// goroutine's stack shrinks only while it uses less than a quarter of it.
func (h *liveHub) openLive(ctx context.Context, ws *websocket.Conn, cork *corkConn, id auth.Identity, dev string) *liveConn {
	c := newLiveConn(h, ws, id.User, dev, newConnID())
	c.cork = cork
	end := h.tokenEnd(id)
	c.tokenIssued.Store(id.Issued.UnixMilli())
	h.deadlines.add(c, end)
	hello := jsonFrame(helloFrame{Type: "hello", Node: h.cfg.Node, ConnID: c.id, DeviceID: dev,
		HeartbeatMS: h.cfg.Heartbeat.Milliseconds(), MaxQueueBytes: h.cfg.MaxQueueBytes, ExpiresMS: end})
	// The registration, the notice and the replay call the store at
	// length; they run on a goroutine of their own so that the stack of
	// this one, which then idles in Read for the connection's life, stays
	// small.
	type built struct {
		notice noticeFrame
		replay []*schemas.Sequenced // opened
		ok     bool                 // false: the connection was closed
	}
	res := make(chan built, 1)
	go func() {
		failed := func(what, reason string, err error) {
			h.unregister(c)
			h.log.Warn(what, "err", err)
			_ = ws.Close(websocket.StatusInternalError, reason)
			res <- built{}
		}
		prev, had, err := h.register(ctx, c)
		if errors.Is(err, redisstore.ErrTooManyDevices) {
			h.unregister(c)
			h.refused(RefusedDevicesFull)
			_ = ws.Close(CloseTooManyDevices, "this user has as many devices connected as it may; close one")
			res <- built{}
			return
		}
		if err != nil {
			failed("register presence", "presence registry unavailable; retry", err)
			return
		}
		n, replay, err := h.notice(ctx, c, prev, had)
		if err != nil {
			failed("build the pull-before notice", "store unavailable; retry", err)
			return
		}
		opened := replay[:0]
		for _, sq := range replay {
			open, err := h.deps.Open(ctx, sq)
			if err != nil {
				// not pushed: the device pulls it with sync
				h.log.Warn("open a replayed message", "conv", sq.GetMessage().GetConvId(), "seq", sq.GetSeq(), "err", err)
				continue
			}
			opened = append(opened, open)
		}
		res <- built{notice: n, replay: opened, ok: true}
	}()
	b := <-res
	if !b.ok {
		return nil
	}
	c.sendFirst(hello, jsonFrame(b.notice))
	for _, open := range b.replay {
		c.push(open)
	}
	// Writes start once the replay is queued: hello, the notice and the
	// replay go out together, not a write each.
	c.start()
	return c
}

// readLive answers the client's frames until the connection ends.
func (h *liveHub) readLive(ctx context.Context, c *liveConn) {
	for {
		// No context ends a read: the socket's close does (every way a
		// connection ends closes it), and a context that can end makes
		// the library arm a timer for each read.
		_, r, err := c.ws.Reader(context.Background())
		if err != nil {
			return
		}
		// The buffer is taken once a frame has begun, so an idle
		// connection holds none.
		buf := frameBuffers.Get().(*bytes.Buffer)
		buf.Reset()
		_, err = buf.ReadFrom(r)
		if err == nil {
			c.lastSeen.Store(time.Now().UnixMilli())
			h.answerFrame(ctx, c, buf.Bytes())
		}
		if buf.Cap() <= maxPooledFrame {
			frameBuffers.Put(buf)
		}
		if err != nil {
			return
		}
	}
}

// answerFrame answers a heartbeat frame in its usual form here (a pong
// needs nothing, a ping a queued pong: neither grows the stack), and
// every other frame off this goroutine's stack.
func (h *liveHub) answerFrame(ctx context.Context, c *liveConn, data []byte) {
	switch string(bytes.TrimSpace(data)) {
	case `{"type":"pong"}`:
		return
	case `{"type":"ping"}`:
		c.send(pongFrame, true)
		return
	}
	h.answerOffStack(ctx, c, data)
}

// answerOffStack answers a frame on a goroutine of its own and waits for
// it: the frames are still answered in turn, and the store calls an
// answer makes (an ack's scripts, a typing check) grow that goroutine's
// stack, not this one's, which idles in a read for the connection's life
// and would keep what it grew to (a stack shrinks only while it uses
// less than a quarter of it). A frame or two a second costs the spawn.
func (h *liveHub) answerOffStack(ctx context.Context, c *liveConn, data []byte) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		h.liveFrame(ctx, c, data) // keeps nothing of the bytes
	}()
	<-done
}

// frameBuffers hold client frames while they are answered.
var frameBuffers = sync.Pool{New: func() any { return new(bytes.Buffer) }}

// maxPooledFrame: a buffer grown past it by a rare large frame is let go.
const maxPooledFrame = 16 << 10

// liveFrame answers one client frame.
func (h *liveHub) liveFrame(ctx context.Context, c *liveConn, data []byte) {
	f, ok := edge.ParseAckFrame(data)
	if !ok {
		f = clientFrame{}
		if aerr := h.deps.Decode(data, &f, ""); aerr != nil {
			c.send(jsonFrame(errorFrame{Type: "error", Code: aerr.Code, Field: aerr.Field, Detail: aerr.Msg}), false)
			return
		}
	}
	ctx, cancel := context.WithTimeout(ctx, h.deps.RequestTimeout)
	defer cancel()
	var err error
	switch f.Type {
	case "ack":
		h.metrics.acks.Inc()
		var items []edge.SeqItem
		if items, err = edge.CheckedSeqItems(f.Acks, "acks", h.deps.MaxCursors); err == nil {
			var res wire.AckResponse
			res, err = h.applyAcks(ctx, c, items, c.knownAccess(items))
			if err == nil && (f.Reply || res.Resync || len(res.EvictedDevices) > 0) {
				c.send(jsonFrame(ackedFrame{Type: "acked", Acked: res.Acked, Resync: res.Resync, EvictedDevices: res.EvictedDevices}), false)
			}
		}
	case "typing":
		err = h.liveEphemeral(ctx, c, f)
	case "reauth":
		err = h.reauth(ctx, c, f.Token)
	case "ping":
		c.send(pongFrame, true)
	case "pong":
	default:
		err = edge.BadRequest("type", "%q is not one of ack, typing, reauth, ping, pong", f.Type)
	}
	if err != nil {
		ae := h.classify(liveRequest, err)
		c.send(jsonFrame(errorFrame{Type: "error", Code: ae.Code, Field: ae.Field, Detail: ae.Msg}), false)
	}
}

// liveEphemeral sends a QoS 0 record (typing) into the pipeline: the push
// stage hands it to the online members once; nothing stores it.
func (h *liveHub) liveEphemeral(ctx context.Context, c *liveConn, f clientFrame) error {
	if err := schemas.ValidID("conv_id", f.ConvID); err != nil {
		return edge.InvalidField("", err)
	}
	if pass, err := h.ephemeralBudget(c, f); !pass {
		return err
	}
	access, err := h.router.Main().ConversationAccess(ctx, c.user, []string{f.ConvID})
	if err != nil {
		return err
	}
	a := access[f.ConvID]
	if !a.Member {
		return edge.Forbidden("not a member of conversation %q", f.ConvID)
	}
	ct := f.ContentType
	if ct == "" {
		ct = "application/x-typing"
	}
	m := &schemas.Message{ClientMsgId: "e-" + newConnID(), ConvId: f.ConvID, ConvType: schemas.ConvType_CONV_TYPE_GROUP,
		Sender: c.user, Qos: schemas.QoS_QOS_AT_MOST_ONCE, Kind: schemas.Kind_KIND_MESSAGE, ContentType: ct, Body: f.Body,
		SendTimeMs: h.clock().UnixMilli()}
	if a.Type == schemas.ConvType_CONV_TYPE_DIRECT {
		peer, err := edge.PeerOf(ctx, h.store, f.ConvID, c.user)
		if err != nil {
			return err
		}
		m.ConvType, m.Recipients = schemas.ConvType_CONV_TYPE_DIRECT, []string{peer}
	}
	lim := h.deps.Limits
	lim.BodyBytes = min(lim.BodyBytes, MaxTypingBody) // a typing notice is small
	if err := schemas.ValidateMessage(m, lim); err != nil {
		return edge.InvalidField("", err)
	}
	v, err := proto.Marshal(m)
	if err != nil {
		return err
	}
	// Fire and forget: QoS 0 never waits, and a lost one is not retried.
	h.deps.Producer.Produce(context.Background(), &kgo.Record{Topic: h.deps.MessagesTopic, Key: []byte(m.ConvId), Value: v}, nil)
	return nil
}

// liveConversations lists the conversations a live connection follows:
// the first NoticeConversations of its user's list, in list order;
// truncated says the list holds more.
func (h *liveHub) liveConversations(ctx context.Context, c *liveConn) (items []readpath.ConvItem, truncated bool, _ error) {
	most := h.cfg.NoticeConversations
	var after readpath.ListCursor
	for len(items) < most {
		page, err := h.reads.ListConversations(ctx, c.user, c.device, after, min(edge.MaxListLimit, most-len(items)))
		if err != nil {
			return nil, false, err
		}
		items = append(items, page.Items...)
		if page.Next == nil {
			break
		}
		after = *page.Next
		truncated = len(items) >= most
	}
	return items, truncated, nil
}

// notice builds the pull-before notice: every conversation with something
// this device has not acked. A device back within the offline threshold
// that missed at most ReplayMax messages gets them on the socket instead
// (replay). It also makes the connection listen to the user's conversations.
func (h *liveHub) notice(ctx context.Context, c *liveConn, prev redisstore.Presence, had bool) (noticeFrame, []*schemas.Sequenced, error) {
	out := noticeFrame{Type: "notice", Conversations: []noticeConvJSON{}}
	items, truncated, err := h.liveConversations(ctx, c)
	if err != nil {
		return out, nil, err
	}
	out.Truncated = truncated
	cur, err := h.router.DeviceCursors(ctx, c.user, c.device)
	if err != nil {
		return out, nil, err
	}
	if out.Resync, err = h.router.WasEvicted(ctx, c.user, c.device); err != nil {
		return out, nil, err
	}
	news, byConv := noticeNews(items)
	access, err := h.noticeListen(ctx, c, items)
	if err != nil {
		return out, nil, err
	}
	news = laterNews(items, access, news, byConv)
	c.mu.Lock()
	for conv, dc := range cur {
		c.acked[conv] = cursorAt{dc.Epoch, dc.Seq}
	}
	for _, conv := range news {
		if a := access[conv]; a.Member {
			c.known[conv] = knownConv{epoch: a.Epoch, seq: byConv[conv].LastSeq, large: a.Large}
		}
	}
	c.mu.Unlock()
	missed, sameEpoch := uint64(0), true
	for _, conv := range news {
		it, a := byConv[conv], access[conv]
		acked := it.Acked
		if dc, ok := cur[conv]; ok && dc.Epoch != a.Epoch {
			acked, sameEpoch = 0, false
		}
		out.add(noticeConvJSON{ConvID: conv, Epoch: a.Epoch, MaxSeq: it.LastSeq,
			DeviceAckedSeq: acked, Unread: it.Unread, Mentions: it.Mentions})
		missed += it.LastSeq - acked
	}
	if len(news) == 0 {
		h.metrics.notices.WithLabelValues("nothing").Inc()
		return out, nil, nil
	}
	short := had && (prev.Node != "" || time.Since(prev.Until) <= h.cfg.OfflineThreshold)
	if !short || !sameEpoch || out.Truncated || out.Resync || missed > uint64(h.cfg.ReplayMax) {
		h.metrics.notices.WithLabelValues("pull").Inc()
		return out, nil, nil
	}
	return h.noticeReplay(ctx, c, out)
}

// noticeNews names the conversations of the user's list with something
// the device has not acked, in list order.
func noticeNews(items []readpath.ConvItem) ([]string, map[string]readpath.ConvItem) {
	var news []string
	byConv := map[string]readpath.ConvItem{}
	for _, it := range items {
		if it.LastSeq > it.Acked {
			news = append(news, it.Conv)
			byConv[it.Conv] = it
		}
	}
	return news, byConv
}

// laterNews adds to news the listened conversations of items whose
// access shows them sequenced after the list was read.
func laterNews(items []readpath.ConvItem, access map[string]redisstore.ConvAccess, news []string, byConv map[string]readpath.ConvItem) []string {
	for _, it := range items {
		if _, ok := byConv[it.Conv]; ok || it.Left {
			continue
		}
		if a := access[it.Conv]; a.Member && a.Seq > it.LastSeq && a.Seq > it.Acked {
			it.LastSeq = a.Seq // sequenced after the list was read
			news = append(news, it.Conv)
			byConv[it.Conv] = it
		}
	}
	return news
}

// noticeListen makes c listen to the conversations of items the user did
// not leave, then reads the access of those and of the left ones with
// news, and releases what the new channels held from each one's join.
func (h *liveHub) noticeListen(ctx context.Context, c *liveConn, items []readpath.ConvItem) (map[string]redisstore.ConvAccess, error) {
	var listened []string
	for _, it := range items {
		if !it.Left {
			listened = append(listened, it.Conv)
		}
	}
	var added map[string]*catchUp
	if len(listened) > 0 {
		// What these channels bring waits until c's join is read
		// below: a record of before it may still be on its way.
		var err error
		if added, err = h.listen(ctx, c, unknownJoin, listened...); err != nil {
			return nil, err
		}
	}
	// Read after listening: what was pushed on a channel before this
	// connection listened to it is sequenced already, so it is here.
	check := listened
	for _, it := range items {
		if it.Left && it.LastSeq > it.Acked {
			check = append(check, it.Conv)
		}
	}
	access := map[string]redisstore.ConvAccess{}
	if len(check) > 0 {
		var err error
		if access, err = h.router.Main().ConversationAccess(ctx, c.user, check); err != nil {
			return nil, err
		}
	}
	floors := make(map[string]releaseAt, len(added))
	for conv, cu := range added {
		if a := access[conv]; a.Member {
			floors[conv] = releaseAt{floor: a.Joined, cu: cu}
		} else {
			h.unlisten(c, conv) // left since the list was read
		}
	}
	h.release(c, floors)
	return access, nil
}

// noticeReplay reads what out names for the device to have on the socket
// (out says replay); out alone when a read fails or is incomplete (the
// device pulls instead).
func (h *liveHub) noticeReplay(ctx context.Context, c *liveConn, out noticeFrame) (noticeFrame, []*schemas.Sequenced, error) {
	var replay []*schemas.Sequenced
	for _, nc := range out.Conversations {
		page, err := h.reads.ReadPage(ctx, c.user, nc.ConvID, readpath.PageQuery{After: nc.DeviceAckedSeq, HasAfter: true,
			Limit: h.cfg.ReplayMax, Epoch: nc.Epoch})
		if err != nil || page.Incomplete {
			h.metrics.notices.WithLabelValues("pull").Inc()
			return out, nil, nil // the device pulls instead
		}
		replay = append(replay, page.Messages...)
	}
	out.Replay = true
	h.metrics.notices.WithLabelValues("replay").Inc()
	return out, replay, nil
}
