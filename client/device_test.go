package client

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"
)

// openDeviceWith opens a device on base with o's loops and intervals
// (its address, token and database are the test's).
func openDeviceWith(t *testing.T, base string, o Options) *Device {
	t.Helper()
	o.Base, o.Token, o.Path = base, testDeviceToken, filepath.Join(t.TempDir(), "d.db")
	d, err := Open(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = d.Close() })
	return d
}

func openDevice(t *testing.T, base string) *Device {
	t.Helper()
	return openDeviceWith(t, base, Options{Limit: 10, PageLimit: 7, Backoff: Backoff{Base: time.Millisecond, Max: 10 * time.Millisecond}})
}

func TestErrorAnswersDecodeIntoTypedErrors(t *testing.T) {
	tests := []struct {
		name       string
		status     int
		body       string
		retryAfter string
		is         error
		field      string
		wait       time.Duration
		retryable  bool
	}{
		{"bad request names the field", 400, `{"error":{"code":"bad_request","field":"acks.seq","message":"beyond the max seq"}}`, "", ErrBadRequest, "acks.seq", 0, false},
		{"unauthorized", 401, `{"error":{"code":"unauthorized","message":"a valid bearer token is required"}}`, "", ErrUnauthorized, "", 0, false},
		{"forbidden", 403, `{"error":{"code":"forbidden","message":"not a member"}}`, "", ErrForbidden, "", 0, false},
		{"epoch conflict", 409, `{"error":{"code":"conflict","field":"epoch","message":"epoch 9 is not the conversation's"}}`, "", ErrEpochConflict, "epoch", 0, false},
		{"busy with Retry-After", 503, `{"error":{"code":"overloaded","message":"retry later"}}`, "3", ErrUnavailable, "", 3 * time.Second, true},
		{"a proxy's page", 502, `<html>bad gateway</html>`, "", nil, "", 0, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if tt.retryAfter != "" {
					w.Header().Set("Retry-After", tt.retryAfter)
				}
				w.WriteHeader(tt.status)
				_, _ = w.Write([]byte(tt.body))
			}))
			defer srv.Close()
			err := New(srv.URL, "t", nil).Ack(context.Background(), []AckItem{{ConvID: "c", Seq: 1}})
			var se *StatusError
			if !errors.As(err, &se) {
				t.Fatalf("error %v is not a *StatusError", err)
			}
			if se.Status != tt.status || se.Field != tt.field || se.RetryAfter != tt.wait || se.Retryable() != tt.retryable {
				t.Errorf("got %+v, want status %d field %q retry-after %v retryable %v", se, tt.status, tt.field, tt.wait, tt.retryable)
			}
			if tt.is != nil && !errors.Is(err, tt.is) {
				t.Errorf("errors.Is(%v, %v) is false", err, tt.is)
			}
		})
	}
}

func TestBackoffWaitsAtLeastRetryAfterAndJittersBelowTheCeiling(t *testing.T) {
	b := Backoff{Base: 100 * time.Millisecond, Max: time.Second}
	busy := &StatusError{Status: 503, RetryAfter: 2 * time.Second}
	for attempt := range 8 {
		if w := b.Wait(attempt, busy); w < 2*time.Second {
			t.Fatalf("attempt %d waits %v, below the answer's Retry-After of 2s", attempt, w)
		}
		ceil := min(time.Second, 100*time.Millisecond<<attempt)
		seen := map[time.Duration]bool{}
		for range 50 {
			w := b.Wait(attempt, errors.New("connection refused"))
			if w < 0 || w > ceil {
				t.Fatalf("attempt %d waits %v, outside [0, %v]", attempt, w, ceil)
			}
			seen[w] = true
		}
		if len(seen) < 10 {
			t.Errorf("attempt %d: only %d distinct waits in 50: no jitter", attempt, len(seen))
		}
	}
}

func TestRetriesHonourRetryAfterThenSucceed(t *testing.T) {
	var calls atomic.Int32
	var first time.Time
	var gap time.Duration
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if calls.Add(1) == 1 {
			first = time.Now()
			w.Header().Set("Retry-After", "1")
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		gap = time.Since(first)
		_, _ = w.Write([]byte(`{}`))
	}))
	defer srv.Close()
	c := New(srv.URL, "t", nil)
	b := Backoff{Base: time.Millisecond, Max: 5 * time.Millisecond}
	if err := b.retry(context.Background(), func() error { return c.Ack(context.Background(), []AckItem{{ConvID: "c", Seq: 1}}) }); err != nil {
		t.Fatal(err)
	}
	if calls.Load() != 2 || gap < time.Second {
		t.Errorf("%d calls, second after %v; want 2 calls, the second after Retry-After's 1s", calls.Load(), gap)
	}
}

func TestRetriesStopAtAnErrorThatCannotPass(t *testing.T) {
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		w.WriteHeader(http.StatusForbidden)
	}))
	defer srv.Close()
	c := New(srv.URL, "t", nil)
	err := Backoff{}.retry(context.Background(), func() error { return c.Ack(context.Background(), []AckItem{{ConvID: "c", Seq: 1}}) })
	if !errors.Is(err, ErrForbidden) || calls.Load() != 1 {
		t.Errorf("err %v after %d calls; want forbidden after one", err, calls.Load())
	}
}

// A message sent while the server is busy waits in the sending table,
// goes out again with the same client_msg_id, and leaves the table when
// it comes back from sync with its seq.
func TestSentMessageIsRetriedWithItsIDAndMatchedToItsSeq(t *testing.T) {
	f, srv := newFakeServer(t, 100, 0, "d-me-bob")
	f.add(5)
	f.busyEach = 1 // every request is refused
	d := openDevice(t, srv.URL)
	ctx := context.Background()
	id, err := d.Send(ctx, Outgoing{ConvID: "d-me-bob", ConvType: "direct", Recipients: []string{"bob"}, Body: []byte("hi")})
	if !errors.Is(err, ErrUnavailable) || id == "" {
		t.Fatalf("send to a busy server: id %q err %v, want an id and ErrUnavailable", id, err)
	}
	if n, err := d.Flush(ctx); n != 0 || err == nil {
		t.Fatalf("flush to a busy server sent %d (%v)", n, err)
	}
	if p, _ := d.Pending(ctx); len(p) != 1 || p[0].ClientMsgID != id || p[0].Accepted || p[0].Attempts != 2 {
		t.Fatalf("pending %+v, want %s not accepted after 2 attempts", p, id)
	}
	f.mu.Lock()
	f.busyEach = 0
	f.mu.Unlock()
	if n, err := d.Flush(ctx); n != 1 || err != nil {
		t.Fatalf("flush sent %d (%v), want 1", n, err)
	}
	if n, _ := d.Flush(ctx); n != 0 {
		t.Errorf("an accepted message was sent again")
	}
	if p, _ := d.Pending(ctx); len(p) != 1 || !p[0].Accepted {
		t.Fatalf("pending %+v, want it accepted and waiting for its seq", p)
	}
	if _, err := d.CatchUp(ctx); err != nil {
		t.Fatal(err)
	}
	if p, _ := d.Pending(ctx); len(p) != 0 {
		t.Errorf("pending %+v after it came back with its seq", p)
	}
	msgs, err := d.Store().Messages(ctx, "d-me-bob", 0, 100)
	if err != nil {
		t.Fatal(err)
	}
	if len(msgs) != 6 || msgs[5].ClientMsgID != id || msgs[5].Seq != 6 {
		t.Errorf("held %d messages, last %+v; want 6 with %s at seq 6", len(msgs), msgs[len(msgs)-1], id)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.sent[id] != 1 {
		t.Errorf("the server took %s %d times", id, f.sent[id])
	}
}

// A message is held once whichever way it comes: the mention lane, the
// conversation's slice, a gap page, or a page read while scrolling.
func TestUniqueKeysHoldAMessageOnceWhateverWayItCame(t *testing.T) {
	d := openDevice(t, "http://127.0.0.1:1")
	ctx := context.Background()
	m := Message{ConvID: "g", Seq: 3, Epoch: 1, ClientMsgID: "m3", Kind: "message", Sender: "bob"}
	resp := SyncResponse{Mentions: []SyncMention{{ConvID: "g", Message: m}},
		Conversations: []SyncConv{{ConvID: "g", Epoch: 1, MaxSeq: 3, Messages: msgs("g", 1, 3)}}}
	for i := range resp.Conversations[0].Messages {
		resp.Conversations[0].Messages[i].Epoch = 1
		resp.Conversations[0].Messages[i].ClientMsgID = "m" + string(rune('0'+i+1))
	}
	res, err := d.Store().Apply(ctx, resp)
	if err != nil {
		t.Fatal(err)
	}
	if res.Stored != 3 || res.Redelivered != 1 {
		t.Errorf("stored %d redelivered %d, want 3 and 1", res.Stored, res.Redelivered)
	}
	// The same id at another position (a replayed send the server
	// sequenced twice would be a bug there; here it must not be a second row).
	d.store.recent = newRecentIDs()
	res, err = d.Store().Apply(ctx, SyncResponse{Conversations: []SyncConv{{ConvID: "g", Epoch: 1, MaxSeq: 4,
		Messages: []Message{{ConvID: "g", Seq: 4, Epoch: 1, ClientMsgID: "m3"}}}}})
	if err != nil {
		t.Fatal(err)
	}
	if n, _ := d.Store().Count(ctx, "g"); n != 3 || res.Stored != 0 {
		t.Errorf("%d rows after a second copy of m3 (stored %d), want 3", n, res.Stored)
	}
}

// While the live channel is up the device polls rarely; a notice on the
// channel wakes it to catch up at once.
func TestRunCatchesUpWhenTheLiveChannelSaysThereIsNews(t *testing.T) {
	f, srv := newFakeServer(t, 100, 0, "g")
	f.live = make(chan struct{})
	f.add(5)
	d := openDeviceWith(t, srv.URL, Options{PollInterval: time.Hour, LivePollInterval: time.Hour})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- d.Run(ctx) }()
	count := func() int { n, _ := d.Store().Count(ctx, "g"); return n }
	for !d.LiveUp() || count() < 5 {
		if ctx.Err() != nil {
			t.Fatalf("no first catch-up with the live channel up (live %v, held %d)", d.LiveUp(), count())
		}
		time.Sleep(10 * time.Millisecond)
	}
	f.add(3)
	f.live <- struct{}{}
	for count() < 8 {
		if ctx.Err() != nil {
			t.Fatalf("the notice did not wake a catch-up: held %d, want 8", count())
		}
		time.Sleep(10 * time.Millisecond)
	}
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Errorf("Run ended with %v, want the context's end", err)
	}
}

// A rejected frame on the live channel moves the message it names from
// sending to rejected at once, with the reason; a message of another
// device (not in this one's sending table) is left alone.
func TestARejectedFrameMovesTheMessageFromSendingToRejected(t *testing.T) {
	f, srv := newFakeServer(t, 100, 0, "g")
	f.live = make(chan struct{})
	f.liveFrames = make(chan string, 2)
	f.refuseAll = true
	d := openDeviceWith(t, srv.URL, Options{PollInterval: time.Hour, LivePollInterval: time.Hour})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	id, err := d.Send(ctx, Outgoing{ConvID: "g", ConvType: "group", Kind: "member_join", Recipients: []string{"carol"}})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- d.Run(ctx) }()
	for !d.LiveUp() {
		if ctx.Err() != nil {
			t.Fatal("the live channel never came up")
		}
		time.Sleep(10 * time.Millisecond)
	}
	f.liveFrames <- `{"type":"rejected","conv_id":"g","client_msg_id":"another-device","reason":"x","at_ms":1}`
	f.liveFrames <- `{"type":"rejected","conv_id":"g","client_msg_id":"` + id + `","reason":"sender: only the owner or an admin adds members","at_ms":1700000000000}`
	for {
		r, err := d.Rejected(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if len(r) > 0 {
			if len(r) != 1 || r[0].ClientMsgID != id || r[0].AtMS != 1700000000000 || r[0].Reason != "sender: only the owner or an admin adds members" ||
				len(r[0].Recipients) != 1 || r[0].Recipients[0] != "carol" {
				t.Fatalf("rejected %+v, want %s alone, as sent, with its reason and time", r, id)
			}
			break
		}
		if ctx.Err() != nil {
			t.Fatal("the rejected frame did not move the message")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if p, err := d.Pending(ctx); err != nil || len(p) != 0 {
		t.Fatalf("sending still holds %+v (%v), want nothing", p, err)
	}
	cancel()
	<-done
}

// A message the server accepted and never sequences is asked about
// rejectionCheckAfter after it was accepted, though the device polls only
// hourly, and moves to rejected; a server without GET /v1/rejections
// (404) does not stop Run, which asks again on its later rounds.
func TestAnAcceptedMessageIsAskedAboutSoonAndAFailedAskDoesNotStopRun(t *testing.T) {
	for _, tc := range []struct {
		name     string
		refusals string
	}{
		{"the server names the refusal", "sender: not a member of g"},
		{"the server has no list of refusals", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, srv := newFakeServer(t, 100, 0, "g")
			f.refuseAll, f.refusals = true, tc.refusals
			d := openDeviceWith(t, srv.URL, Options{NoLive: true, PollInterval: time.Hour})
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			id, err := d.Send(ctx, Outgoing{ConvID: "g", ConvType: "group", Body: []byte("hi")})
			if err != nil {
				t.Fatal(err)
			}
			done := make(chan error, 1)
			go func() { done <- d.Run(ctx) }()
			asked := func() int { f.mu.Lock(); defer f.mu.Unlock(); return f.asked }
			for asked() == 0 {
				select {
				case err := <-done:
					t.Fatalf("Run ended with %v before asking", err)
				case <-ctx.Done():
					t.Fatal("the device never asked about its accepted message")
				case <-time.After(10 * time.Millisecond):
				}
			}
			select {
			case err := <-done:
				t.Fatalf("Run ended with %v after asking", err)
			case <-time.After(200 * time.Millisecond):
			}
			r, err := d.Rejected(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if want := tc.refusals != ""; (len(r) == 1 && r[0].ClientMsgID == id) != want {
				t.Fatalf("rejected %+v, want %s there: %v", r, id, want)
			}
			cancel()
			<-done
		})
	}
}

// The list is read page by page and kept, so that the next start draws
// it from the database before the server answers.
func TestConversationListPagesAndIsKeptForTheNextStart(t *testing.T) {
	f, srv := newFakeServer(t, 100, 0, "a", "b", "c", "d", "e")
	f.add(3)
	d := openDevice(t, srv.URL)
	ctx := context.Background()
	var ids []string
	for cursor, pages := "", 0; ; pages++ {
		l, err := d.Conversations(ctx, cursor, 2)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range l.Conversations {
			ids = append(ids, c.ConvID)
		}
		if cursor = l.Next; cursor == "" || pages > 5 {
			break
		}
	}
	if fmt.Sprint(ids) != "[a b c d e]" {
		t.Fatalf("pages listed %v, want [a b c d e]", ids)
	}
	cached, err := d.CachedConversations(ctx, 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(cached) != 5 || cached[0].ConvID != "a" || cached[0].Unread != 3 || cached[1].Mentions != 1 ||
		cached[0].Preview == nil || cached[0].Preview.Text != "body of a-00003" {
		t.Fatalf("cached list %+v", cached)
	}
}
