package client

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"testing"

	"github.com/coder/websocket"
)

// fakeServer speaks the part of the API a catching-up device uses, over
// conversations whose timelines grow by grow messages per sync until
// they hold target each: slices of the newest limit messages with a gap
// below them, mentions that repeat what the device may hold, acks that
// raise the device's cursor, pages by after/before, and now and then a
// 503 with Retry-After. It is the server the crash test restarts a
// device against, so that only the device's process dies.
type fakeServer struct {
	mu       sync.Mutex
	convs    []string
	msgs     map[string][]Message // seq i+1 at i
	acked    map[string]uint64
	sent     map[string]int // client_msg_id → times POSTed
	target   int
	grow     int
	limit    int
	syncs    int
	busyEach int // every busyEach-th request answers 503 (0: never)
	// perAnswer bounds the conversations of a sync answer, the others
	// are summarised (0: no bound), as the byte budget does.
	perAnswer int
	// live, when set, serves GET /v1/live: hello, then a notice for every
	// value sent on it.
	live chan struct{}
	// refuseAll accepts what is POSTed (202) but never sequences it, as
	// when the pipeline refuses it; with refusals set, GET /v1/rejections
	// names each with that reason (without, it answers 404, as a server
	// that does not keep refusals).
	refuseAll bool
	refusals  string
	asked     int // GET /v1/rejections
	// liveFrames, when set, are written to the live channel as they come.
	liveFrames chan string
	requests   int
}

func newFakeServer(t *testing.T, target, grow int, convs ...string) (*fakeServer, *httptest.Server) {
	f, srv := startFakeServer(target, grow, convs...)
	t.Cleanup(srv.Close)
	return f, srv
}

// startFakeServer is newFakeServer for an Example, which closes it itself.
func startFakeServer(target, grow int, convs ...string) (*fakeServer, *httptest.Server) {
	f := &fakeServer{convs: convs, msgs: map[string][]Message{}, acked: map[string]uint64{}, sent: map[string]int{},
		target: target, grow: grow, limit: 50}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/sync", f.sync)
	mux.HandleFunc("POST /v1/ack", f.ack)
	mux.HandleFunc("POST /v1/messages", f.send)
	mux.HandleFunc("GET /v1/conversations/{conv}/messages", f.page)
	mux.HandleFunc("GET /v1/live", f.liveHandler)
	mux.HandleFunc("GET /v1/conversations", f.list)
	mux.HandleFunc("GET /v1/rejections", f.rejections)
	return f, httptest.NewServer(f.busy(mux))
}

func (f *fakeServer) busy(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		f.requests++
		busy := f.busyEach > 0 && f.requests%f.busyEach == 0
		f.mu.Unlock()
		if busy {
			w.Header().Set("Retry-After", "0")
			w.WriteHeader(http.StatusServiceUnavailable)
			_, _ = w.Write([]byte(`{"error":{"code":"overloaded","message":"too many requests in flight; retry later"}}`))
			return
		}
		h.ServeHTTP(w, r)
	})
}

// appendLocked adds n messages to conv.
func (f *fakeServer) appendLocked(conv string, n int, sender string, ids ...string) {
	for i := 0; i < n; i++ {
		seq := uint64(len(f.msgs[conv]) + 1)
		id := fmt.Sprintf("%s-%05d", conv, seq)
		if i < len(ids) {
			id = ids[i]
		}
		f.msgs[conv] = append(f.msgs[conv], Message{ConvID: conv, Seq: seq, Epoch: 1, ClientMsgID: id, Kind: "message",
			ConvType: "group", Sender: sender, Body: []byte("body of " + id)})
	}
}

// add grows every conversation by n messages, up to the target.
func (f *fakeServer) add(n int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, c := range f.convs {
		f.appendLocked(c, min(n, f.target-len(f.msgs[c])), "carol")
	}
}

func (f *fakeServer) rejections(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.asked++
	if f.refusals == "" {
		http.NotFound(w, r)
		return
	}
	var out struct {
		Rejections []Rejection `json:"rejections"`
	}
	for id := range f.sent {
		out.Rejections = append(out.Rejections, Rejection{ConvID: "g", ClientMsgID: id, Reason: f.refusals, AtMS: 1})
	}
	writeJSON(w, out)
}

func (f *fakeServer) liveHandler(w http.ResponseWriter, r *http.Request) {
	if f.live == nil || r.Header.Get("Authorization") == "" {
		http.NotFound(w, r)
		return
	}
	c, err := websocket.Accept(w, r, &websocket.AcceptOptions{Subprotocols: []string{"offlinebox.v1"}})
	if err != nil {
		return
	}
	defer func() { _ = c.CloseNow() }()
	ctx := c.CloseRead(r.Context())
	if err := c.Write(ctx, websocket.MessageText, []byte(`{"type":"hello","node":"fake"}`)); err != nil {
		return
	}
	for {
		select {
		case <-ctx.Done():
			return
		case <-f.live:
			if err := c.Write(ctx, websocket.MessageText, []byte(`{"type":"notice","conversations":[]}`)); err != nil {
				return
			}
		case frame := <-f.liveFrames:
			if err := c.Write(ctx, websocket.MessageText, []byte(frame)); err != nil {
				return
			}
		}
	}
}

// list pages the conversations in the order given, cursor = index.
func (f *fakeServer) list(w http.ResponseWriter, r *http.Request) {
	limit, _ := strconv.Atoi(r.URL.Query().Get("limit"))
	from, _ := strconv.Atoi(r.URL.Query().Get("cursor"))
	f.mu.Lock()
	defer f.mu.Unlock()
	var l ConvList
	for i := from; i < len(f.convs) && len(l.Conversations) < limit; i++ {
		c := f.convs[i]
		last := uint64(len(f.msgs[c]))
		item := ConvItem{ConvID: c, Kind: "group", Unread: last - min(last, f.acked[c]), LastSeq: last,
			LastActiveMS: int64(1000 - i), Mentions: i % 2, AckedSeq: f.acked[c]}
		if last > 0 {
			item.Preview = &Preview{Seq: last, Sender: f.msgs[c][last-1].Sender, Text: string(f.msgs[c][last-1].Body)}
		}
		l.Conversations = append(l.Conversations, item)
		if i+1 < len(f.convs) && len(l.Conversations) == limit {
			l.Next = strconv.Itoa(i + 1)
		}
	}
	writeJSON(w, l)
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}

func (f *fakeServer) sync(w http.ResponseWriter, r *http.Request) {
	var req SyncRequest
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.syncs++
	for _, c := range f.convs {
		f.appendLocked(c, min(f.grow, f.target-len(f.msgs[c])), "bob")
	}
	var resp SyncResponse
	for _, c := range f.convs {
		cur := f.acked[c]
		if rc, ok := req.Cursors[c]; ok {
			cur = rc.Seq
		}
		last := uint64(len(f.msgs[c]))
		if cur >= last {
			continue
		}
		if len(resp.Conversations) == f.perAnswer && f.perAnswer > 0 {
			resp.Summaries = append(resp.Summaries, struct {
				ConvID string `json:"conv_id"`
			}{c})
			continue
		}
		from := cur + 1
		if last > uint64(f.limit) {
			from = max(from, last-uint64(f.limit)+1)
		}
		sc := SyncConv{ConvID: c, Epoch: 1, MaxSeq: last, Messages: append([]Message(nil), f.msgs[c][from-1:last]...)}
		if from > cur+1 {
			sc.HasMore = true
			sc.Gap = &struct {
				From uint64 `json:"from"`
				To   uint64 `json:"to"`
			}{cur + 1, from - 1}
		}
		resp.Conversations = append(resp.Conversations, sc)
		// A mention of a message the device may hold already, as the
		// lane repeats it until read.
		if f.syncs%3 == 0 {
			resp.Mentions = append(resp.Mentions, SyncMention{ConvID: c, Message: f.msgs[c][(f.syncs*7)%int(last)]})
		}
	}
	writeJSON(w, resp)
}

func (f *fakeServer) ack(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Acks []AckItem `json:"acks"`
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, a := range req.Acks {
		if a.Seq > uint64(len(f.msgs[a.ConvID])) {
			w.WriteHeader(http.StatusBadRequest)
			_, _ = w.Write([]byte(`{"error":{"code":"bad_request","field":"acks.seq","message":"beyond the max seq"}}`))
			return
		}
		f.acked[a.ConvID] = max(f.acked[a.ConvID], a.Seq)
	}
	writeJSON(w, map[string]any{"acked": len(req.Acks)})
}

func (f *fakeServer) send(w http.ResponseWriter, r *http.Request) {
	var m Outgoing
	if err := json.NewDecoder(r.Body).Decode(&m); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.sent[m.ClientMsgID]++
	if f.sent[m.ClientMsgID] == 1 && !f.refuseAll { // the server dedupes by client_msg_id
		f.appendLocked(m.ConvID, 1, "me", m.ClientMsgID)
	}
	w.WriteHeader(http.StatusAccepted)
	writeJSON(w, map[string]string{"client_msg_id": m.ClientMsgID, "conv_id": m.ConvID})
}

func (f *fakeServer) page(w http.ResponseWriter, r *http.Request) {
	conv := r.PathValue("conv")
	after, _ := strconv.ParseUint(r.URL.Query().Get("after"), 10, 64)
	before, _ := strconv.ParseUint(r.URL.Query().Get("before"), 10, 64)
	if from, err := strconv.ParseUint(r.URL.Query().Get("from"), 10, 64); err == nil {
		after = from - 1
	}
	if to, err := strconv.ParseUint(r.URL.Query().Get("to"), 10, 64); err == nil {
		before = to + 1
	}
	limit, _ := strconv.Atoi(r.URL.Query().Get("limit"))
	f.mu.Lock()
	defer f.mu.Unlock()
	all := f.msgs[conv]
	if before == 0 || before > uint64(len(all))+1 {
		before = uint64(len(all)) + 1
	}
	p := Page{ConvID: conv, Epoch: 1, MaxSeq: uint64(len(all)), FirstSeq: 1}
	for s := after + 1; s < before && len(p.Messages) < limit; s++ {
		p.Messages = append(p.Messages, all[s-1])
	}
	p.HasMore = len(p.Messages) > 0 && p.Messages[len(p.Messages)-1].Seq+1 < before
	writeJSON(w, p)
}
