package checker

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"time"

	"github.com/offlinebox/offlinebox/bench/internal/harness"
	"github.com/offlinebox/offlinebox/client"
	"github.com/offlinebox/offlinebox/schemas"
)

// Behaviour is how simulated devices act while traffic flows. Zero values
// take the defaults.
type Behaviour struct {
	// OfflineMax: a device stays offline for up to this long between
	// sessions.
	OfflineMax time.Duration
	// CrashBeforeStorePercent of sync answers are lost (the app dies
	// before storing them): nothing stored, nothing acked.
	CrashBeforeStorePercent int
	// CrashBeforeAckPercent of stored answers are never acked (the app
	// dies between storing and acking).
	CrashBeforeAckPercent int
	// ServerCursorPercent of syncs send no cursors, so the server resumes
	// from the device's acked cursors.
	ServerCursorPercent int
	// ResendPercent of API sends are sent again with the same
	// client_msg_id (the answer was lost on the way back).
	ResendPercent int
	// ReadPercent of sessions send a read receipt.
	ReadPercent int
}

func (b Behaviour) withDefaults() Behaviour {
	if b.OfflineMax == 0 {
		b.OfflineMax = time.Second
	}
	return b
}

// DeviceStats count what one device did.
type DeviceStats struct {
	Syncs            int `json:"syncs"`
	Pages            int `json:"pages"`
	CrashBeforeStore int `json:"crash_before_store"`
	CrashBeforeAck   int `json:"crash_before_ack"`
	Errors           int `json:"errors"`
	Overloaded       int `json:"overloaded_503"`
	Sent             int `json:"api_sent"`
	Resent           int `json:"api_resent"`
	Reads            int `json:"reads"`
	FinalSyncRounds  int `json:"final_sync_rounds"`
	// Live channel (RunConfig.LiveURLs): connections opened, dropped by
	// the server, messages pushed, acks sent on the socket.
	LiveSessions      int    `json:"live_sessions,omitempty"`
	LiveDrops         int    `json:"live_drops,omitempty"`
	Pushed            int    `json:"pushed,omitempty"`
	LiveAcks          int    `json:"live_acks,omitempty"`
	LastErr           string `json:"last_error,omitempty"`
	FinalCatchUpError string `json:"final_catch_up_error,omitempty"`
}

// device is one simulated device of a user.
type device struct {
	Device
	cl     *client.Client
	st     *localStore
	rng    *rand.Rand
	b      Behaviour
	outbox []*schemas.Message
	// accepted are the messages the API answered 202 for: they must be
	// in the log.
	accepted []*schemas.Message
	stats    DeviceStats
}

// errOverloaded marks a 503 or a 429 (the user's share of requests is in
// use): wait as told and come back.
var errOverloaded = errors.New("server overloaded")

// classify turns an API error into what the device does next.
func (d *device) failed(err error) error {
	var se *client.StatusError
	d.stats.Errors++
	d.stats.LastErr = err.Error()
	if errors.As(err, &se) && (se.Status == http.StatusServiceUnavailable || se.Status == http.StatusTooManyRequests) {
		d.stats.Overloaded++
		return errOverloaded
	}
	return err
}

// live runs sessions with offline pauses until done is closed, then sends
// what is left in the outbox.
func (d *device) live(ctx context.Context, done <-chan struct{}) {
	for {
		select {
		case <-done:
			d.flushOutbox(ctx)
			return
		case <-ctx.Done():
			return
		case <-time.After(time.Duration(d.rng.Int64N(int64(d.b.OfflineMax) + 1))):
		}
		if err := d.session(ctx); errors.Is(err, errOverloaded) {
			_ = harness.Sleep(ctx, time.Second)
		}
	}
}

// session is one time online: a few sync rounds (each may crash), the
// gaps, maybe a message and a read receipt.
func (d *device) session(ctx context.Context) error {
	for range 1 + d.rng.IntN(3) {
		news, err := d.round(ctx, true)
		if err != nil || !news {
			if err != nil {
				return err
			}
			break
		}
	}
	if err := d.pageGaps(ctx); err != nil {
		return err
	}
	if len(d.outbox) > 0 && d.rng.IntN(3) == 0 {
		if err := d.send(ctx, d.outbox[0]); err != nil {
			return err
		}
		d.outbox = d.outbox[1:]
	}
	if d.rng.IntN(100) < d.b.ReadPercent {
		return d.read(ctx)
	}
	return nil
}

// round is one sync: store, ack. With crashes on, the answer may be lost
// before storing or the ack never sent. news reports that the answer had
// anything.
func (d *device) round(ctx context.Context, crashes bool) (news bool, err error) {
	req := client.SyncRequest{Cursors: d.st.cursors()}
	if crashes && d.rng.IntN(100) < d.b.ServerCursorPercent {
		req.Cursors = nil
	}
	resp, _, err := d.cl.Sync(ctx, req)
	d.stats.Syncs++
	if err != nil {
		return false, d.failed(err)
	}
	news = len(resp.Conversations) > 0 || len(resp.Summaries) > 0 || resp.Omitted > 0
	if crashes && d.rng.IntN(100) < d.b.CrashBeforeStorePercent {
		d.stats.CrashBeforeStore++
		return false, nil
	}
	acks := d.st.apply(resp)
	if crashes && d.rng.IntN(100) < d.b.CrashBeforeAckPercent {
		d.stats.CrashBeforeAck++
		return false, nil
	}
	return news, d.ack(ctx, acks)
}

// ack acknowledges what was stored. A batch naming a conversation the
// user has left is refused whole (403): then each is acked on its own.
func (d *device) ack(ctx context.Context, acks []client.AckItem) error {
	if len(acks) == 0 {
		return nil
	}
	err := d.cl.Ack(ctx, acks)
	if status(err) != http.StatusForbidden && status(err) != http.StatusConflict {
		if err != nil {
			return d.failed(err)
		}
		return nil
	}
	for _, a := range acks {
		if err := d.cl.Ack(ctx, []client.AckItem{a}); err != nil && status(err) != http.StatusForbidden && status(err) != http.StatusConflict {
			return d.failed(err)
		}
	}
	return nil
}

func status(err error) int {
	var se *client.StatusError
	if errors.As(err, &se) {
		return se.Status
	}
	return 0
}

// pageGaps reads the gaps sync told of, page by page. A gap of a
// conversation the user left (403) or whose timeline was rebuilt (409)
// is dropped; any other error keeps it for the next session.
func (d *device) pageGaps(ctx context.Context) error {
	for id, hc := range d.st.convs {
		for len(hc.gaps) > 0 {
			g := hc.gaps[0]
			err := d.pageGap(ctx, id, hc, g)
			switch status(err) {
			case 0:
				if err != nil {
					return d.failed(err)
				}
			case http.StatusForbidden, http.StatusConflict:
			default:
				return d.failed(err)
			}
			hc.gaps = hc.gaps[1:]
		}
	}
	return nil
}

func (d *device) pageGap(ctx context.Context, conv string, hc *heldConv, g [2]uint64) error {
	after := g[0] - 1
	for after < g[1] {
		p, _, err := d.cl.PageAfter(ctx, conv, after, g[1]+1, hc.epoch, 200)
		d.stats.Pages++
		if err != nil {
			return err
		}
		after = d.st.putPage(conv, after, p)
		if len(p.Messages) == 0 || !p.HasMore {
			return nil
		}
	}
	return nil
}

// finalCatchUp syncs (without crashes) until the server has nothing new
// and every gap is read, retrying failures until ctx ends.
func (d *device) finalCatchUp(ctx context.Context) error {
	for {
		err := d.catchUpOnce(ctx)
		if err == nil {
			return nil
		}
		if ctx.Err() != nil {
			d.stats.FinalCatchUpError = err.Error()
			return fmt.Errorf("device %s/%s: %w", d.User, d.ID, err)
		}
		_ = harness.Sleep(ctx, 500*time.Millisecond)
	}
}

func (d *device) catchUpOnce(ctx context.Context) error {
	for range 10000 {
		d.stats.FinalSyncRounds++
		news, err := d.round(ctx, false)
		if err != nil {
			return err
		}
		if !news {
			return d.pageGaps(ctx)
		}
	}
	return errors.New("sync did not finish after 10000 rounds")
}
