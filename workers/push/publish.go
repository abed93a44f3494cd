package push

import (
	"context"
	"errors"
	"time"

	"github.com/offlinebox/offlinebox/live"
	"github.com/offlinebox/offlinebox/redisstore"
)

// publish sends each conversation's records once on its channel, and
// looks up the presence of the users named (membership changes, rejected
// records) to send them one batch per node.
func (p *Pusher) publish(ctx context.Context, items []*item) error {
	var users []string
	seen := map[string]bool{}
	for _, it := range items {
		for _, u := range append(it.users, it.listeners...) {
			if !seen[u] {
				seen[u] = true
				users = append(users, u)
			}
		}
	}
	pres, err := p.store.PresenceOf(ctx, users)
	var unread redisstore.ItemErrors
	if errors.As(err, &unread) {
		// Users whose presence can never be read count as offline: they
		// pull what this round had for them.
		for i, uerr := range unread {
			p.cfg.Logger.Warn("push: a user's presence cannot be read; taken as offline", "user", users[i], "err", uerr)
		}
	} else if err != nil {
		return err
	}
	p.metrics.lookups.Add(float64(len(users)))
	r := p.route(items, pres)
	byNode, groups := r.byNode, r.groups
	convPublishes, groupPublishes := r.convPublishes, r.groupPublishes
	out := make(map[string]*live.Batch, len(byNode)+len(groups))
	for ch, b := range byNode {
		out[ch] = b
	}
	for ch, b := range groups {
		out[ch] = b
	}
	if err := p.bus.PublishBatches(ctx, out); err != nil {
		return err
	}
	p.metrics.publishes.WithLabelValues("node").Add(float64(len(byNode)))
	p.metrics.publishes.WithLabelValues("conv").Add(float64(convPublishes))
	p.metrics.publishes.WithLabelValues("group").Add(float64(groupPublishes))
	p.markTold(items)
	return nil
}

// routed are a round's batches: by node channel, and by conversation
// channel, with how many of the latter are of small and of large ones.
type routed struct {
	byNode, groups                map[string]*live.Batch
	convPublishes, groupPublishes int
}

// route puts each item's envelope in the batches of its channel and of
// the nodes of its users' online devices (pres).
func (p *Pusher) route(items []*item, pres map[string][]redisstore.Presence) routed {
	now := p.cfg.Clock()
	keys := p.store.Keys()
	r := routed{byNode: map[string]*live.Batch{}, groups: map[string]*live.Batch{}}
	for _, it := range items {
		if it.dropped {
			continue
		}
		env := live.Envelope{Kind: it.kind, Conv: it.conv, Large: it.large, Record: it.record, Rejected: it.rejected, SentMS: now.UnixMilli()}
		if it.channel {
			ch := keys.ConvChannel(it.conv)
			if r.groups[ch] == nil {
				r.groups[ch] = &live.Batch{}
				if it.large {
					r.groupPublishes++
				} else {
					r.convPublishes++
				}
			}
			r.groups[ch].Envelopes = append(r.groups[ch].Envelopes, env)
			p.metrics.pushes.WithLabelValues(it.kind).Inc()
		}
		targets := onlineTargets(it.users, it, pres, now)
		if !it.channel && len(targets) > 0 {
			p.metrics.pushes.WithLabelValues(it.kind).Inc()
		}
		for node, ts := range targets {
			ch := keys.NodeChannel(node)
			if r.byNode[ch] == nil {
				r.byNode[ch] = &live.Batch{}
			}
			e := env
			e.Targets = ts
			r.byNode[ch].Envelopes = append(r.byNode[ch].Envelopes, e)
			p.metrics.targets.WithLabelValues(it.kind).Add(float64(len(ts)))
		}
		listen := onlineTargets(it.listeners, it, pres, now)
		for node, ts := range listen {
			ch := keys.NodeChannel(node)
			if r.byNode[ch] == nil {
				r.byNode[ch] = &live.Batch{}
			}
			r.byNode[ch].Envelopes = append(r.byNode[ch].Envelopes, live.Envelope{Kind: live.KindListen, Conv: it.conv, Targets: ts})
		}
	}
	return r
}

// onlineTargets are the online devices of users, by node.
func onlineTargets(users []string, it *item, pres map[string][]redisstore.Presence, now time.Time) map[string][]live.Target {
	out := map[string][]live.Target{}
	for _, u := range users {
		for _, d := range pres[u] {
			if d.Online(now) {
				out[d.Node] = append(out[d.Node], live.Target{User: u, Device: d.Device, Conn: d.Conn, Joined: it.joined[u]})
			}
		}
	}
	return out
}
