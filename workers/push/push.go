package push

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"sort"
	"sync"

	"github.com/redis/go-redis/v9"
	"github.com/twmb/franz-go/pkg/kgo"
	"google.golang.org/protobuf/proto"

	"github.com/offlinebox/offlinebox/live"
	"github.com/offlinebox/offlinebox/redisstore"
	"github.com/offlinebox/offlinebox/schemas"
	"github.com/offlinebox/offlinebox/stream"
)

// Pusher is the push stage. It implements stream.Handler and is safe for
// concurrent Handle calls of different partitions.
type Pusher struct {
	cfg     Config
	store   *redisstore.Store
	bus     *live.Bus
	metrics *metrics

	mu      sync.Mutex
	members map[string]memberEntry

	rounds combiner
}

var _ stream.Handler = (*Pusher)(nil)

type memberEntry struct {
	version uint64
	// large: the conversation is a large group (members and untold are
	// not kept: its records go on its channel, its joiners by name).
	large   bool
	members map[string]uint64 // member → seq that made them one
	// untold are the members whose nodes this stage has not sent a record
	// of the conversation by name yet, nor told to listen: they may not
	// listen to its channel. A member who stays one across a change of
	// the membership stays told.
	untold map[string]bool
}

// New returns a Pusher reading presence and members from rdb (the main
// store) and publishing on it.
func New(cfg Config, rdb redis.UniversalClient) (*Pusher, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if rdb == nil {
		return nil, errors.New("push: a Redis client is required")
	}
	cfg = cfg.withDefaults()
	st, err := redisstore.New(rdb, cfg.Store)
	if err != nil {
		return nil, fmt.Errorf("push: %w", err)
	}
	m, err := newMetrics(cfg.Metrics)
	if err != nil {
		return nil, fmt.Errorf("push: register metrics: %w", err)
	}
	p := &Pusher{cfg: cfg, store: st, bus: live.NewBus(rdb, st.Config().CallTimeout), metrics: m,
		members: map[string]memberEntry{}}
	p.rounds.run = p.pushRound
	return p, nil
}

// item is one record to hand out.
type item struct {
	kind   string
	conv   string
	seq    uint64 // 0 for ephemeral records
	record []byte
	// msgKind, sender and recipients are the record's message's.
	msgKind    schemas.Kind
	sender     string
	recipients []string
	// users meant, looked up in the presence registry (a conversation's
	// members when its membership changed, a large group's joiners, a
	// rejected record's sender); their nodes start listening to the
	// conversation's channel.
	users []string
	// channel: published once on the conversation's channel, to the nodes
	// whose connections listen to it; large: the conversation is a large
	// group.
	channel bool
	large   bool
	// listeners are joiners not pushed this record (it is their join):
	// their nodes start listening to the conversation's channel.
	listeners []string
	// joined: user → the seq they joined at (for the targets' floors).
	joined map[string]uint64
	// told are the members of users and listeners named for the first
	// time (see memberEntry.untold).
	told []string
	// exceptUser is left out (the sender of a QoS 0 record).
	exceptUser string
	rejected   *live.Rejected
	// dropped: a store call this round made for it can never succeed (a
	// key of the wrong type); it is not pushed (see storeRefused).
	dropped bool
}

// Handle pushes the records of one partition, in one round with those of
// the other partitions handled meanwhile. A Redis that is down fails the
// round (the runner waits and retries; a push repeated is harmless, the
// client keeps messages by seq). Nothing is a dead letter here: what is
// undecodable was already dead-lettered by the stage that owns it.
func (p *Pusher) Handle(ctx context.Context, records []*kgo.Record) ([]stream.DeadLetter, error) {
	items := p.decode(records)
	if len(items) == 0 {
		return nil, nil
	}
	return nil, p.rounds.do(ctx, items)
}

// pushRound runs one round: the refusals in it are kept for their
// senders first (store first, as for messages), then everything is
// pushed.
func (p *Pusher) pushRound(ctx context.Context, items []*item) error {
	if err := p.keepRejections(ctx, items); err != nil {
		return err
	}
	return p.pushItems(ctx, items)
}

// storeRefused reads an error of a store call made for many items: a
// failure to wait for is returned, to fail the round (the runner tries it
// again); the items a store can never answer for (redisstore.ItemErrors: a
// key of the wrong type) are given up alone, counted and logged, and
// their devices get them with their next pull. Without this one broken
// key would fail every round it is in, for ever, and hold every partition
// that shares them. whose(i) are the items of failed index i.
func (p *Pusher) storeRefused(err error, whose func(i int) []*item) error {
	var failed redisstore.ItemErrors
	if !errors.As(err, &failed) {
		return err
	}
	for i, ferr := range failed {
		its := whose(i)
		for _, it := range its {
			it.dropped = true
		}
		p.metrics.skipped.WithLabelValues("store_refused").Add(float64(len(its)))
		p.cfg.Logger.Warn("push: records not pushed: the store can never answer for them; their devices pull them",
			"records", len(its), "err", ferr)
	}
	return nil
}

// pushItems publishes one round of items (records of a conversation are
// in one partition, so in order): those of conversations the stage knows
// as they are in one round trip, then the others resolved.
func (p *Pusher) pushItems(ctx context.Context, items []*item) error {
	p.metrics.rounds.Inc()
	rest, err := p.publishKnown(ctx, items)
	if err != nil || len(rest) == 0 {
		return err
	}
	if err := p.resolve(ctx, rest); err != nil {
		return err
	}
	return p.publish(ctx, rest)
}

// publishKnown publishes on its channel each conversation's records that
// all go there as the stage last resolved the conversation: seen at a
// membership version, every member told (or a large group), and no record
// in the round that needs more than the channel (a leave, whose receipts
// are forgotten first; a large group's join, whose joiners are named).
// Each conversation's batch is published only while the conversation is
// still at that version (the check and the publish are one step), so
// reading the audience costs no round trip of its own. It returns the
// items left to resolve: of the other conversations, and of those that
// changed since.
func (p *Pusher) publishKnown(ctx context.Context, items []*item) ([]*item, error) {
	byConv := map[string][]*item{}
	var convs []string
	var rest []*item
	for _, it := range items {
		if it.kind == live.KindRejected {
			rest = append(rest, it)
			continue
		}
		if byConv[it.conv] == nil {
			convs = append(convs, it.conv)
		}
		byConv[it.conv] = append(byConv[it.conv], it)
	}
	now := p.cfg.Clock()
	var batches []live.ChannelBatch
	var batched [][]*item
	p.mu.Lock()
	for _, c := range convs {
		its := byConv[c]
		e, ok := p.members[c]
		if !ok || e.version == 0 || (!e.large && len(e.untold) > 0) || !channelOnly(its, e) {
			rest = append(rest, its...)
			continue
		}
		var b live.Batch
		for _, it := range its {
			b.Envelopes = append(b.Envelopes, live.Envelope{Kind: it.kind, Conv: c, Large: e.large, Record: it.record, SentMS: now.UnixMilli()})
		}
		data, err := live.Encode(b)
		if err != nil {
			p.mu.Unlock()
			return nil, err
		}
		batches = append(batches, live.ChannelBatch{Conv: c,
			Audience: redisstore.PushAudience{Large: e.large, Version: e.version}, Data: data})
		batched = append(batched, its)
	}
	p.mu.Unlock()
	if len(batches) == 0 {
		return rest, nil
	}
	sent, err := p.bus.PublishUnchanged(ctx, p.store.Keys(), batches)
	if err := p.storeRefused(err, func(i int) []*item { return batched[i] }); err != nil {
		return nil, err
	}
	for i, b := range batches {
		if batched[i][0].dropped {
			continue
		}
		if !sent[i] {
			p.metrics.changed.Inc()
			rest = append(rest, batched[i]...)
			continue
		}
		channel := "conv"
		if b.Audience.Large {
			channel = "group"
		}
		p.metrics.publishes.WithLabelValues(channel).Inc()
		for _, it := range batched[i] {
			p.metrics.pushes.WithLabelValues(it.kind).Inc()
		}
	}
	return rest, nil
}

// channelOnly reports whether the items of a conversation resolved
// already as e need nothing but its channel. A QoS 0 record of a sender
// the cache does not know as a member is left to resolve: the membership
// may have changed since (and if not, it is skipped there).
func channelOnly(items []*item, e memberEntry) bool {
	for _, it := range items {
		switch {
		case it.kind == live.KindPush && it.msgKind == schemas.Kind_KIND_MEMBER_LEAVE:
			return false
		case e.large && it.msgKind == schemas.Kind_KIND_MEMBER_JOIN:
			return false
		case it.kind == live.KindEphemeral && !e.large:
			if _, member := e.members[it.sender]; !member {
				return false
			}
		}
	}
	return true
}

func (p *Pusher) decode(records []*kgo.Record) []*item {
	var items []*item
	for _, r := range records {
		switch r.Topic {
		case p.cfg.SequencedTopic:
			it, ok := sequencedPush(r.Value)
			if !ok {
				sq, err := schemas.DecodeSequenced(r.Value)
				if err != nil {
					p.metrics.skipped.WithLabelValues("undecodable").Inc()
					continue
				}
				m := sq.GetMessage()
				it = &item{kind: live.KindPush, conv: m.GetConvId(), seq: sq.GetSeq(),
					msgKind: m.GetKind(), sender: m.GetSender(), recipients: m.GetRecipients()}
			}
			it.record = r.Value
			items = append(items, it)
		case p.cfg.MessagesTopic:
			if storedRecord(r.Value) {
				continue // it comes back sequenced
			}
			m, err := schemas.DecodeMessage(r.Value, p.cfg.Limits)
			if err != nil || m.Stored() {
				continue // stored records come back sequenced; invalid ones fanout dead-letters
			}
			items = append(items, &item{kind: live.KindEphemeral, conv: m.GetConvId(), record: r.Value,
				msgKind: m.GetKind(), sender: m.GetSender(), recipients: m.GetRecipients(), exceptUser: m.GetSender()})
		case p.cfg.DeadLetterTopic:
			if it := p.rejectedOf(r); it != nil {
				items = append(items, it)
			}
		}
	}
	return items
}

// rejectedOf tells the sender of a refused message why, in the public
// vocabulary (publicRefusal); a letter of a record that was sequenced is
// nobody's refusal, and is skipped.
func (p *Pusher) rejectedOf(r *kgo.Record) *item {
	var topic, reason, code, seq string
	var hasSeq bool
	for _, h := range r.Headers {
		switch h.Key {
		case schemas.HeaderDeadTopic:
			topic = string(h.Value)
		case schemas.HeaderDeadReason:
			reason = string(h.Value)
		case schemas.HeaderDeadCode:
			code = string(h.Value)
		case schemas.HeaderDeadSeq:
			seq, hasSeq = string(h.Value), true
		}
	}
	if topic != p.cfg.MessagesTopic {
		return nil
	}
	code, ok := publicRefusal(reason, code, seq, hasSeq)
	if !ok {
		p.metrics.skipped.WithLabelValues("sequenced").Inc()
		return nil
	}
	// A dead letter may break any limit (that may be why it is one): it
	// is read as it is, only its sender and ids checked.
	var m schemas.Message
	if err := proto.Unmarshal(r.Value, &m); err != nil || schemas.ValidID("sender", m.GetSender()) != nil {
		return nil // nobody to tell
	}
	return &item{kind: live.KindRejected, conv: m.GetConvId(), sender: m.GetSender(), users: []string{m.GetSender()},
		rejected: &live.Rejected{Conv: m.GetConvId(), ClientMsgID: m.GetClientMsgId(), Code: code,
			Reason: schemas.RefusalSentence(code), AtMS: r.Timestamp.UnixMilli()}}
}

// publicRefusal is the code a dead letter's sender is told, from its
// headers: ok is false for a record that got a seq (it reached its
// conversation) or a letter that is no refusal. A letter written before
// letters carried a seq and a code is read by its reason's beginning
// (schemas.LegacyRefusal); the reason itself is never told.
func publicRefusal(reason, code, seq string, hasSeq bool) (string, bool) {
	switch {
	case hasSeq && seq != "0", hasSeq && code == "":
		return "", false
	case code != "":
		return schemas.PublicRefusal(code), true
	}
	code, sequenced := schemas.LegacyRefusal(reason)
	return code, !sequenced
}

// keepRejections stores the round's refusals in their senders' lists
// before any is pushed (store first, as for messages): a sender offline
// now reads them on its next pull.
func (p *Pusher) keepRejections(ctx context.Context, items []*item) error {
	var rs []redisstore.Rejection
	for _, it := range items {
		if it.kind == live.KindRejected {
			rj := it.rejected
			rs = append(rs, redisstore.Rejection{Sender: it.sender, Conv: rj.Conv, ClientMsgID: rj.ClientMsgID,
				Code: rj.Code, Reason: rj.Reason, AtMS: rj.AtMS})
		}
	}
	if len(rs) == 0 {
		return nil
	}
	added, err := p.store.AddRejections(ctx, rs, p.cfg.Clock())
	p.metrics.rejectionsKept.Add(float64(added))
	var failed redisstore.ItemErrors
	if errors.As(err, &failed) {
		// Those senders' lists can never be written; they are still told
		// live, and the others' were kept.
		for i, ferr := range failed {
			p.cfg.Logger.Warn("push: a refusal cannot be kept for its sender; it is only pushed", "sender", rs[i].Sender,
				"conv", rs[i].Conv, "client_msg_id", rs[i].ClientMsgID, "err", ferr)
		}
		p.metrics.rejectionsNotKept.Add(float64(len(failed)))
		return nil
	}
	return err
}

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
		if it.kind == live.KindRejected || it.dropped {
			continue
		}
		if aud[it.conv].Large {
			it.channel, it.large = true, true
			if it.msgKind == schemas.Kind_KIND_MEMBER_JOIN {
				it.users = it.recipients // their nodes subscribe on this push
				it.joined = map[string]uint64{}
				for _, u := range it.users {
					it.joined[u] = it.seq
				}
			}
			continue
		}
		mem := entries[it.conv].members
		if it.kind == live.KindEphemeral {
			if _, ok := mem[it.sender]; !ok {
				p.metrics.skipped.WithLabelValues("sender_not_member").Inc()
				continue
			}
		}
		un := untold[it.conv]
		if len(un) == 0 || it.msgKind == schemas.Kind_KIND_MEMBER_LEAVE {
			// Every member's nodes listen already (a leave: the nodes
			// stop the leavers listening as it passes).
			it.channel = true
			continue
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
	now := p.cfg.Clock()
	keys := p.store.Keys()
	byNode := map[string]*live.Batch{}
	groups := map[string]*live.Batch{}
	var convPublishes, groupPublishes int
	for _, it := range items {
		if it.dropped {
			continue
		}
		env := live.Envelope{Kind: it.kind, Conv: it.conv, Large: it.large, Record: it.record, Rejected: it.rejected, SentMS: now.UnixMilli()}
		if it.channel {
			ch := keys.ConvChannel(it.conv)
			if groups[ch] == nil {
				groups[ch] = &live.Batch{}
				if it.large {
					groupPublishes++
				} else {
					convPublishes++
				}
			}
			groups[ch].Envelopes = append(groups[ch].Envelopes, env)
			p.metrics.pushes.WithLabelValues(it.kind).Inc()
		}
		targets := map[string][]live.Target{}
		for _, u := range it.users {
			for _, d := range pres[u] {
				if d.Online(now) {
					targets[d.Node] = append(targets[d.Node], live.Target{User: u, Device: d.Device, Conn: d.Conn, Joined: it.joined[u]})
				}
			}
		}
		if !it.channel && len(targets) > 0 {
			p.metrics.pushes.WithLabelValues(it.kind).Inc()
		}
		for node, ts := range targets {
			ch := keys.NodeChannel(node)
			if byNode[ch] == nil {
				byNode[ch] = &live.Batch{}
			}
			e := env
			e.Targets = ts
			byNode[ch].Envelopes = append(byNode[ch].Envelopes, e)
			p.metrics.targets.WithLabelValues(it.kind).Add(float64(len(ts)))
		}
		listen := map[string][]live.Target{}
		for _, u := range it.listeners {
			for _, d := range pres[u] {
				if d.Online(now) {
					listen[d.Node] = append(listen[d.Node], live.Target{User: u, Device: d.Device, Conn: d.Conn, Joined: it.joined[u]})
				}
			}
		}
		for node, ts := range listen {
			ch := keys.NodeChannel(node)
			if byNode[ch] == nil {
				byNode[ch] = &live.Batch{}
			}
			byNode[ch].Envelopes = append(byNode[ch].Envelopes, live.Envelope{Kind: live.KindListen, Conv: it.conv, Targets: ts})
		}
	}
	out := make(map[string][]byte, len(byNode)+len(groups))
	for ch, b := range byNode {
		data, err := live.Encode(*b)
		if err != nil {
			return err
		}
		out[ch] = data
	}
	for ch, b := range groups {
		data, err := live.Encode(*b)
		if err != nil {
			return err
		}
		out[ch] = data
	}
	if err := p.bus.PublishMany(ctx, out); err != nil {
		return err
	}
	p.metrics.publishes.WithLabelValues("node").Add(float64(len(byNode)))
	p.metrics.publishes.WithLabelValues("conv").Add(float64(convPublishes))
	p.metrics.publishes.WithLabelValues("group").Add(float64(groupPublishes))
	p.markTold(items)
	return nil
}
