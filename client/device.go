package client

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sync/atomic"
	"time"
)

// Options configure a Device.
type Options struct {
	// Base is the API's address (http://host:port); Token a bearer token
	// whose dev claim names this device. Path is the database file.
	Base, Token, Path string
	// HTTP is the HTTP client (a 60 s timeout one when nil).
	HTTP *http.Client
	// Backoff of retries and reconnects.
	Backoff Backoff
	// Limit and MaxBytes of each sync (0: the server's defaults);
	// PageLimit of each gap page (200 when 0).
	Limit, MaxBytes, PageLimit int
	// PollInterval is how often Run syncs while nothing else wakes it
	// (5 s when 0); LivePollInterval while the live channel is up (60 s
	// when 0: the channel wakes it for news).
	PollInterval, LivePollInterval time.Duration
	// NoLive keeps Run off the live channel (GET /v1/live): it then only
	// polls.
	NoLive bool
	// Logger (slog.Default when nil).
	Logger *slog.Logger

	// step, when set, is called after each durable step of a catch-up
	// ("stored", "acked", "paged"): the crash tests kill the process there.
	step func(string)
}

// Device is one device of one user: the API client, its local database
// and the loops that keep the two in step. It is what an application
// ships: messages are stored before they are acked, what is sent is kept
// until the server gave it a seq, and failures back off with jitter.
type Device struct {
	api   *Client
	store *Store
	o     Options
	log   *slog.Logger
	wake  chan struct{}
	live  atomic.Bool
	// rejectionsAsked is when Run last asked for refused messages, and
	// rejectionsCheckedUpTo the acceptance time up to which that ask
	// covered the messages sent (Run alone reads and writes both).
	rejectionsAsked, rejectionsCheckedUpTo time.Time
}

// Open opens the device's database and its API client.
func Open(ctx context.Context, o Options) (*Device, error) {
	if o.Base == "" || o.Token == "" || o.Path == "" {
		return nil, errors.New("open device: Options.Base, Token and Path are required")
	}
	if err := tokenNamesDevice(o.Token); err != nil {
		return nil, fmt.Errorf("open device: %w", err)
	}
	if o.PageLimit == 0 {
		o.PageLimit = 200
	}
	if o.PollInterval == 0 {
		o.PollInterval = 5 * time.Second
	}
	if o.LivePollInterval == 0 {
		o.LivePollInterval = time.Minute
	}
	st, err := OpenStore(ctx, o.Path)
	if err != nil {
		return nil, err
	}
	d := &Device{api: New(o.Base, o.Token, o.HTTP), store: st, o: o, log: o.Logger, wake: make(chan struct{}, 1)}
	if d.log == nil {
		d.log = slog.Default()
	}
	return d, nil
}

// Close closes the database.
func (d *Device) Close() error { return d.store.Close() }

// Store is the device's database.
func (d *Device) Store() *Store { return d.store }

// API is the device's API client.
func (d *Device) API() *Client { return d.api }

func (d *Device) stepped(name string) {
	if d.o.step != nil {
		d.o.step(name)
	}
}

// Report says what one catch-up did.
type Report struct {
	Syncs, Pages        int
	Stored, Redelivered int
	// Incomplete counts gaps the Redis window no longer held: read them
	// with LoadOlder (history).
	Incomplete int
	Resync     bool
}

// CatchUp brings the database level with the server: it acks what a
// crash left stored but unacked, syncs, stores and acks until the server
// has nothing new, then pages every gap it holds, oldest first. Each
// answer is stored in one transaction before it is acked, so a crash
// anywhere loses nothing and stores nothing twice.
func (d *Device) CatchUp(ctx context.Context) (Report, error) {
	var rep Report
	if err := d.ackStored(ctx); err != nil {
		return rep, err
	}
	after := "" // where the mention lane continues
	for round := 0; ; round++ {
		if round == 10000 {
			return rep, errors.New("catch-up: not done after 10000 syncs")
		}
		cursors, err := d.store.Cursors(ctx)
		if err != nil {
			return rep, err
		}
		var resp SyncResponse
		err = d.o.Backoff.retry(ctx, func() error {
			var err error
			resp, _, err = d.api.Sync(ctx, SyncRequest{Cursors: cursors, Limit: d.o.Limit, MaxBytes: d.o.MaxBytes, MentionsAfter: after})
			return err
		})
		if err != nil {
			return rep, fmt.Errorf("catch-up sync: %w", err)
		}
		rep.Syncs++
		rep.Resync = rep.Resync || resp.Resync
		if len(resp.Conversations) == 0 && len(resp.Summaries) == 0 && resp.Omitted == 0 && len(resp.Mentions) == 0 && !resp.MentionsMore {
			break
		}
		res, err := d.store.Apply(ctx, resp)
		if err != nil {
			return rep, err
		}
		rep.Stored += res.Stored
		rep.Redelivered += res.Redelivered
		d.stepped("stored")
		if err := d.ack(ctx, res.Acks); err != nil {
			return rep, err
		}
		d.stepped("acked")
		if len(resp.Conversations) == 0 && len(resp.Summaries) == 0 && resp.Omitted == 0 && !resp.MentionsMore {
			break // only mentions the device holds already: they leave the lane when read
		}
		after = resp.nextMentions()
	}
	if err := d.pageGaps(ctx, &rep); err != nil {
		return rep, err
	}
	return rep, nil
}

// ackStored acks the cursors a crash left stored but unacked.
func (d *Device) ackStored(ctx context.Context) error {
	acks, err := d.store.Unacked(ctx)
	if err != nil {
		return err
	}
	return d.ack(ctx, acks)
}

func (d *Device) ack(ctx context.Context, acks []AckItem) error {
	if len(acks) == 0 {
		return nil
	}
	err := d.o.Backoff.retry(ctx, func() error { return d.api.Ack(ctx, acks) })
	var se *StatusError
	if errors.As(err, &se) && se.Status == http.StatusConflict {
		// The timeline was rebuilt since: the next sync rebases the
		// conversation and its cursor; nothing stored is lost.
		d.log.Warn("ack refused for another epoch; the next sync rebases", "err", err)
		return nil
	}
	if err != nil {
		return fmt.Errorf("ack: %w", err)
	}
	return d.store.markAcked(ctx, acks)
}

// pageGaps reads every recorded gap page by page, each page stored with
// the gap narrowed in the same transaction.
func (d *Device) pageGaps(ctx context.Context, rep *Report) error {
	gaps, err := d.store.Gaps(ctx)
	if err != nil {
		return err
	}
	for _, g := range gaps {
		for {
			var p Page
			err := d.o.Backoff.retry(ctx, func() error {
				var err error
				p, _, err = d.api.PageRange(ctx, g.ConvID, g.From, g.To, g.Epoch, d.o.PageLimit)
				return err
			})
			if errors.Is(err, ErrEpochConflict) {
				_, _, _, err = d.store.storePage(ctx, g, Page{}) // the gap is of a timeline that is gone
				if err != nil {
					return err
				}
				break
			}
			if err != nil {
				return fmt.Errorf("page gap %s %d..%d: %w", g.ConvID, g.From, g.To, err)
			}
			rep.Pages++
			if p.Incomplete {
				rep.Incomplete++
			}
			next, open, fresh, err := d.store.storePage(ctx, g, p)
			if err != nil {
				return err
			}
			rep.Stored += fresh
			d.stepped("paged")
			if !open {
				break
			}
			g = next
		}
	}
	return nil
}
