package push

import (
	"context"
	"maps"
	"sort"

	"github.com/offlinebox/offlinebox/live"
	"github.com/offlinebox/offlinebox/redisstore"
	"github.com/offlinebox/offlinebox/schemas"
)

// resolve finds whom each item is for.
func (p *Pusher) resolve(ctx context.Context, items []*item) error {
	var convs []string
	seen := map[string]bool{}
	for _, it := range items {
		if it.kind != live.KindRejected && !seen[it.conv] {
			seen[it.conv] = true
			convs = append(convs, it.conv)
		}
	}
	if len(convs) == 0 {
		return nil
	}
	aud, err := p.store.PushAudiences(ctx, convs)
	if err := p.storeRefused(err, func(i int) []*item { return itemsOf(items, convs[i]) }); err != nil {
		return err
	}
	entries := map[string]memberEntry{}
	// untold: each conversation's untold members, a copy for this batch:
	// the cache learns who was told once the batch is published.
	untold := map[string]map[string]bool{}
	for _, c := range convs {
		a, ok := aud[c]
		if !ok && itemsOf(items, c)[0].dropped {
			continue
		}
		if a.Large {
			p.remember(c, memberEntry{version: a.Version, large: true})
			continue
		}
		e, err := p.membersOf(ctx, c, a.Version)
		if err != nil && redisstore.Permanent(err) {
			err = redisstore.ItemErrors{0: err}
		}
		if err := p.storeRefused(err, func(int) []*item { return itemsOf(items, c) }); err != nil {
			return err
		}
		entries[c], untold[c] = e, e.untold
	}
	for _, it := range items {
		if it.kind != live.KindRejected && !it.dropped {
			p.assign(it, aud[it.conv].Large, entries[it.conv].members, untold[it.conv])
		}
	}
	return p.forgetLeavers(ctx, items)
}

// assign decides how it goes out: on its conversation's channel (large:
// a large group), by name to members not told yet (un, taken from as
// they are told), or both. mem are the conversation's members.
func (p *Pusher) assign(it *item, large bool, mem map[string]uint64, un map[string]bool) {
	if large {
		it.channel, it.large = true, true
		if it.msgKind == schemas.Kind_KIND_MEMBER_JOIN {
			it.users = it.recipients // their nodes subscribe on this push
			it.joined = map[string]uint64{}
			for _, u := range it.users {
				it.joined[u] = it.seq
			}
		}
		return
	}
	if it.kind == live.KindEphemeral {
		if _, ok := mem[it.sender]; !ok {
			p.metrics.skipped.WithLabelValues("sender_not_member").Inc()
			return
		}
	}
	if len(un) == 0 || it.msgKind == schemas.Kind_KIND_MEMBER_LEAVE {
		// Every member's nodes listen already (a leave: the nodes
		// stop the leavers listening as it passes).
		it.channel = true
		return
	}
	// The members told already get it on the channel; the others'
	// nodes get it by name and start listening (then read what the
	// channel carried before their subscription took from the
	// store), so everything after goes on the channel alone.
	it.channel = len(un) < len(mem)
	it.joined = mem
	for u := range un {
		// Records of seq s go to members who joined before s; a
		// joiner's nodes start listening with its join. A QoS 0
		// record tells nobody to listen.
		switch joined := mem[u]; {
		case it.seq == 0:
			if u != it.exceptUser {
				it.users = append(it.users, u)
			}
		case joined < it.seq:
			it.users = append(it.users, u)
			it.told = append(it.told, u)
			delete(un, u)
		case joined == it.seq:
			it.listeners = append(it.listeners, u)
			it.told = append(it.told, u)
			delete(un, u)
		}
	}
	sort.Strings(it.users)
	sort.Strings(it.listeners)
}

// forgetLeavers forgets, before a leave is pushed, the receipts of the
// members it took out.
func (p *Pusher) forgetLeavers(ctx context.Context, items []*item) error {
	for _, it := range items {
		if it.kind == live.KindPush && it.msgKind == schemas.Kind_KIND_MEMBER_LEAVE && !it.dropped {
			err := p.store.ForgetReceipts(ctx, it.conv, it.recipients)
			if err != nil && redisstore.Permanent(err) {
				err = redisstore.ItemErrors{0: err}
			}
			if err := p.storeRefused(err, func(int) []*item { return []*item{it} }); err != nil {
				return err
			}
		}
	}
	return nil
}

// itemsOf are the items of conv, in order.
func itemsOf(items []*item, conv string) []*item {
	var out []*item
	for _, it := range items {
		if it.conv == conv && it.kind != live.KindRejected {
			out = append(out, it)
		}
	}
	return out
}

// membersOf reads a conversation's members, from the cache while its
// membership version is the same, with a copy of its untold members. A
// membership this stage has not seen leaves untold the members it did
// not know as such (all of them, the first time it sees the
// conversation: its own restart).
func (p *Pusher) membersOf(ctx context.Context, conv string, version uint64) (memberEntry, error) {
	p.mu.Lock()
	old, ok := p.members[conv]
	if ok {
		old.untold = maps.Clone(old.untold)
	}
	p.mu.Unlock()
	if ok && old.version == version && version != 0 && !old.large {
		return old, nil
	}
	mem, err := p.store.Members(ctx, conv)
	if err != nil {
		return memberEntry{}, err
	}
	e := memberEntry{version: version, members: mem, untold: map[string]bool{}}
	for u, joined := range mem {
		if was, known := old.members[u]; !ok || !known || was != joined || old.untold[u] {
			e.untold[u] = true
		}
	}
	p.metrics.memberRead.Inc()
	p.remember(conv, e)
	e.untold = maps.Clone(e.untold)
	return e, nil
}

// remember caches what the stage resolved of a conversation.
func (p *Pusher) remember(conv string, e memberEntry) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if _, ok := p.members[conv]; !ok && len(p.members) >= p.cfg.MemberCache {
		for k := range p.members { // drop an arbitrary tenth
			delete(p.members, k)
			if len(p.members) < p.cfg.MemberCache*9/10 {
				break
			}
		}
	}
	p.members[conv] = e
}

// markTold records that the members the items named for the first time
// were sent a record by name or told to listen (the items are published).
func (p *Pusher) markTold(items []*item) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, it := range items {
		if len(it.told) == 0 {
			continue
		}
		if e, ok := p.members[it.conv]; ok {
			for _, u := range it.told {
				delete(e.untold, u)
			}
		}
	}
}
