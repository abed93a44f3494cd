package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/offlinebox/offlinebox/auth"
	"github.com/offlinebox/offlinebox/chstore"
	"github.com/offlinebox/offlinebox/client"
	"github.com/offlinebox/offlinebox/redisstore"
	"github.com/offlinebox/offlinebox/verify"
)

// demoUser comes back after a few days away and catches up.
const demoUser = "alice"

// demoConv is one conversation of the demo scenario.
type demoConv struct {
	id       string
	group    bool
	members  []string // groups: everyone, the creator first
	senders  []string // who writes its messages, in turn
	messages int
	// mentionAt: message indexes that @mention the demo user; allAt: @all.
	mentionAt []int
	allAt     int
}

// demoScenario: a small team, a noisy group far above the per-conversation
// limit with a mention early in it, and direct messages.
func demoScenario() []demoConv {
	return []demoConv{
		{id: "g-product", group: true, members: []string{"bob", "alice", "carol", "dave"},
			senders: []string{"bob", "carol", "dave"}, messages: 40, mentionAt: []int{3}, allAt: -1},
		{id: "g-watercooler", group: true, members: []string{"erin", "alice", "bob", "carol", "dave", "frank"},
			senders: []string{"erin", "frank", "bob", "dave"}, messages: 450, mentionAt: []int{5}, allAt: 300},
		{id: "d-alice-bob", senders: []string{"bob"}, messages: 6, allAt: -1},
		{id: "d-alice-erin", senders: []string{"erin"}, messages: 4, allAt: -1},
	}
}

// lastSeq is the conversation's counter once seeded: groups start with the
// join record.
func (c demoConv) lastSeq() uint64 {
	if c.group {
		return uint64(c.messages) + 1
	}
	return uint64(c.messages)
}

// seqOf is the seq of message i.
func (c demoConv) seqOf(i int) uint64 { return c.lastSeq() - uint64(c.messages) + uint64(i) + 1 }

func (c demoConv) clientMsgID(i int) string { return fmt.Sprintf("%s-%04d", c.id, i) }

type demo struct {
	base    string
	keyring *auth.Keyring
	out     io.Writer
	cfg     *stackConfig
	clients map[string]*client.Client
}

func (d *demo) as(user string) (*client.Client, error) {
	if c, ok := d.clients[user]; ok {
		return c, nil
	}
	c, err := d.client(user, "")
	if err != nil {
		return nil, err
	}
	if d.clients == nil {
		d.clients = map[string]*client.Client{}
	}
	d.clients[user] = c
	return c, nil
}

// seed sends the scenario through POST /v1/messages, as users would.
func (d *demo) seed(ctx context.Context, convs []demoConv) (int, error) {
	sent := 0
	for _, c := range convs {
		if c.group {
			creator, err := d.as(c.members[0])
			if err != nil {
				return sent, err
			}
			if err := creator.Send(ctx, client.Outgoing{ClientMsgID: c.id + "-join", ConvID: c.id, ConvType: "group",
				Kind: "member_join", Recipients: c.members}); err != nil {
				return sent, fmt.Errorf("create %s: %w", c.id, err)
			}
			sent++
		}
		for i := range c.messages {
			sender := c.senders[i%len(c.senders)]
			cl, err := d.as(sender)
			if err != nil {
				return sent, err
			}
			m := client.Outgoing{ClientMsgID: c.clientMsgID(i), ConvID: c.id, ConvType: "direct",
				ContentType: "text/plain", Body: []byte(demoText(c, sender, i))}
			if c.group {
				m.ConvType = "group"
			} else {
				m.Recipients = []string{demoUser}
			}
			if containsInt(c.mentionAt, i) {
				m.Mentions = []string{demoUser}
			}
			m.MentionAll = i == c.allAt
			if err := cl.Send(ctx, m); err != nil {
				return sent, fmt.Errorf("send %s: %w", m.ClientMsgID, err)
			}
			sent++
		}
	}
	return sent, nil
}

func demoText(c demoConv, sender string, i int) string {
	switch {
	case containsInt(c.mentionAt, i):
		return fmt.Sprintf("@%s can you review the launch checklist before Friday? (%s)", demoUser, sender)
	case i == c.allAt:
		return "@all the office is closed on Monday"
	case c.group:
		return fmt.Sprintf("%s: message %d in %s — lunch plans, links, and the usual chatter", sender, i, c.id)
	default:
		return fmt.Sprintf("hi %s, direct note %d from %s", demoUser, i, sender)
	}
}

func containsInt(xs []int, x int) bool {
	for _, v := range xs {
		if v == x {
			return true
		}
	}
	return false
}

// waitDrained polls the demo user's conversation list until every
// conversation reached its counter: the pipeline has processed everything.
func (d *demo) waitDrained(ctx context.Context, convs []demoConv) (client.ConvList, error) {
	cl, err := d.client(demoUser, "phone")
	if err != nil {
		return client.ConvList{}, err
	}
	want := map[string]uint64{}
	for _, c := range convs {
		want[c.id] = c.lastSeq()
	}
	deadline := time.Now().Add(2 * time.Minute)
	for {
		list, _, err := cl.Conversations(ctx, 50)
		if err == nil {
			got := 0
			for _, c := range list.Conversations {
				if w, ok := want[c.ConvID]; ok && c.LastSeq >= w {
					got++
				}
			}
			if got == len(want) {
				return list, nil
			}
		}
		if time.Now().After(deadline) {
			return list, fmt.Errorf("pipeline did not drain in 2 minutes (last error: %v)", err)
		}
		select {
		case <-ctx.Done():
			return list, ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// demoResult is what the demo checks and prints.
type demoResult struct {
	sent, expected, received, lost, duplicates int
	mentionsExpected, mentionsFirst            int
	stats                                      client.CatchUpStats
	list                                       client.ConvList
	listLatency                                time.Duration
	unreadAfterRead                            uint64
	historyRows, historyWant                   uint64
	report                                     *verify.Report
}

// play runs the scenario and prints the summary.
func (d *demo) play(ctx context.Context) (*demoResult, error) {
	convs := demoScenario()
	r := &demoResult{}
	var err error
	fmt.Fprintf(d.out, "offlinebox demo: %s comes back after a few days away\n\n", demoUser)
	if r.sent, err = d.seed(ctx, convs); err != nil {
		return nil, err
	}
	if _, err = d.waitDrained(ctx, convs); err != nil {
		return nil, err
	}
	// A device that comes back without its local store is a new device:
	// the server resumes a known device from its acked cursors.
	laptop, err := d.client(demoUser, "laptop-"+randomSecret()[:8])
	if err != nil {
		return nil, err
	}
	t0 := time.Now()
	if r.list, _, err = laptop.Conversations(ctx, 50); err != nil {
		return nil, err
	}
	r.listLatency = time.Since(t0)
	held := client.NewHeld()
	if r.stats, err = laptop.CatchUp(ctx, held, client.CatchUpOptions{}); err != nil {
		return nil, fmt.Errorf("catch up: %w", err)
	}
	d.account(convs, held, r)
	readTo := convs[0].lastSeq()
	for _, l := range r.list.Conversations {
		if l.ConvID == convs[0].id {
			readTo = max(readTo, l.LastSeq)
		}
	}
	if r.unreadAfterRead, err = d.readOnOneDeviceClearsAll(ctx, laptop, convs[0], readTo); err != nil {
		return nil, err
	}
	for _, c := range convs {
		r.historyWant += c.lastSeq()
	}
	if r.historyRows, err = d.historyRows(ctx, convs, r.historyWant); err != nil {
		return nil, err
	}
	if r.report, err = d.verify(ctx); err != nil {
		return nil, err
	}
	d.print(convs, r)
	return r, nil
}

// account compares what the laptop holds with what was sent to the user.
func (d *demo) account(convs []demoConv, held *client.Held, r *demoResult) {
	firstMentions := map[string]bool{}
	for _, m := range r.stats.First.Mentions {
		firstMentions[m.Message.ClientMsgID] = true
	}
	// A mention the first answer's slice of its conversation carries is
	// not repeated in the lane: it is in the first answer all the same.
	for _, c := range r.stats.First.Conversations {
		for _, m := range c.Messages {
			firstMentions[m.ClientMsgID] = true
		}
	}
	for _, c := range convs {
		hc := held.Convs[c.id]
		bySeq := map[string]int{}
		if hc != nil {
			for _, m := range hc.Msgs {
				bySeq[m.ClientMsgID]++
			}
		}
		var ids []string
		if c.group {
			// The demo user is a founding member: the group's creation
			// notice is theirs too.
			ids = append(ids, c.id+"-join")
		}
		for i := range c.messages {
			ids = append(ids, c.clientMsgID(i))
		}
		for _, id := range ids {
			r.expected++
			switch n := bySeq[id]; {
			case n == 0:
				r.lost++
			case n > 1:
				r.duplicates += n - 1
			}
		}
		// Read up to the list's last seq less its unread: messages sent
		// after the scenario (an earlier run's users) count in both.
		readSeq := c.lastSeq()
		for _, l := range r.list.Conversations {
			if l.ConvID == c.id {
				readSeq = max(l.LastSeq, c.lastSeq())
				readSeq -= min(l.Unread, readSeq)
			}
		}
		for i := range c.messages {
			id := c.clientMsgID(i)
			if c.seqOf(i) <= readSeq {
				continue // read on another device earlier: no longer pending
			}
			if containsInt(c.mentionAt, i) || (i == c.allAt && c.senders[i%len(c.senders)] != demoUser) {
				r.mentionsExpected++
				if firstMentions[id] {
					r.mentionsFirst++
				}
			}
		}
		for _, n := range bySeq {
			r.received += n
		}
	}
}

// readOnOneDeviceClearsAll marks conv read up to seq on the laptop and
// returns the unread the phone still shows at or below seq (0 once
// convindex applied the receipt). Messages sequenced after seq are new to
// both devices: on a second run over the same data a message users sent
// while the serving demo stopped may be sequenced only now, so it counts
// as unread and is not the read's to clear.
func (d *demo) readOnOneDeviceClearsAll(ctx context.Context, laptop *client.Client, conv demoConv, seq uint64) (uint64, error) {
	if err := laptop.Read(ctx, []client.AckItem{{ConvID: conv.id, Seq: seq}}); err != nil {
		return 0, fmt.Errorf("read %s: %w", conv.id, err)
	}
	phone, err := d.client(demoUser, "phone")
	if err != nil {
		return 0, err
	}
	var stale uint64
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); {
		list, _, err := phone.Conversations(ctx, 50)
		if err != nil {
			return 0, err
		}
		for _, c := range list.Conversations {
			if c.ConvID == conv.id {
				stale = unreadAtOrBelow(c, seq)
			}
		}
		if stale == 0 {
			return 0, nil
		}
		time.Sleep(100 * time.Millisecond)
	}
	return stale, nil
}

// unreadAtOrBelow is the part of c's unread count at or below seq: until
// the receipt is applied, everything from the read cursor to seq; after,
// whatever unread exceeds the LastSeq-seq messages newer than the read.
func unreadAtOrBelow(c client.ConvItem, seq uint64) uint64 {
	if c.ReadSeq < seq {
		return seq - c.ReadSeq
	}
	newer := c.LastSeq - min(c.LastSeq, seq)
	return c.Unread - min(c.Unread, newer)
}

// scenarioRows counts the history rows of c's own seqs (1..its last):
// messages users sent after the scenario, on an earlier run's data, are
// not the demo's to count. The scenario's records come back with the same
// seqs on a second run (their client_msg_ids are deduplicated).
func scenarioRows(ctx context.Context, ch *chstore.Store, c demoConv) (uint64, error) {
	_, rows, err := ch.Query(ctx, fmt.Sprintf("SELECT uniqExact(epoch, seq) FROM history WHERE conv_id = '%s' AND seq <= %d", c.id, c.lastSeq()))
	if err != nil {
		return 0, err
	}
	if len(rows) != 1 || len(rows[0]) != 1 {
		return 0, fmt.Errorf("count %s: %d rows", c.id, len(rows))
	}
	return strconv.ParseUint(rows[0][0], 10, 64)
}

// historyRows waits until ClickHouse holds every sequenced record once.
func (d *demo) historyRows(ctx context.Context, convs []demoConv, want uint64) (uint64, error) {
	ch, err := openClickHouse(ctx, d.cfg)
	if err != nil {
		return 0, err
	}
	defer ch.Close()
	var total uint64
	for deadline := time.Now().Add(time.Minute); ; {
		total = 0
		for _, c := range convs {
			n, err := scenarioRows(ctx, ch, c)
			if err != nil {
				return 0, err
			}
			total += n
		}
		if total >= want || time.Now().After(deadline) {
			return total, nil
		}
		time.Sleep(250 * time.Millisecond)
	}
}

func (d *demo) verify(ctx context.Context) (*verify.Report, error) {
	rdb, err := openRedis(ctx, d.cfg)
	if err != nil {
		return nil, err
	}
	defer rdb.Close()
	st, err := redisstore.New(rdb, storeConfig(d.cfg))
	if err != nil {
		return nil, err
	}
	checker, err := verify.New(verify.Config{}, st, nil)
	if err != nil {
		return nil, err
	}
	return checker.Run(ctx)
}

func (d *demo) print(convs []demoConv, r *demoResult) {
	w := d.out
	fmt.Fprintf(w, "sent      %d records through POST /v1/messages: %d conversations, %d unread @mentions of %s\n",
		r.sent, len(convs), r.mentionsExpected, demoUser)
	fmt.Fprintf(w, "list      GET /v1/conversations answered in %s:\n", r.listLatency.Round(time.Microsecond))
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "          conversation\tunread\tlast seq\tmentions")
	for _, c := range r.list.Conversations {
		fmt.Fprintf(tw, "          %s\t%d\t%d\t%d\n", c.ConvID, c.Unread, c.LastSeq, c.Mentions)
	}
	_ = tw.Flush()
	s := r.stats
	fmt.Fprintf(w, "catch-up  %d sync answers and %d gap pages in %s, %d KB in all\n",
		s.SyncResponses, s.PageResponses, s.Duration.Round(time.Millisecond), s.TotalBytes/1024)
	fmt.Fprintf(w, "          first answer %d KB with %d of %d @mentions; largest answer %d KB\n",
		s.FirstBytes/1024, r.mentionsFirst, r.mentionsExpected, s.MaxBytes/1024)
	fmt.Fprintf(w, "received  %d of %d timeline entries meant for %s: lost %d, duplicates %d\n",
		r.received, r.expected, demoUser, r.lost, r.duplicates)
	fmt.Fprintf(w, "read      %s read on the laptop: the phone now shows unread %d up to the read\n", convs[0].id, r.unreadAfterRead)
	fmt.Fprintf(w, "history   ClickHouse holds %d of %d sequenced records\n", r.historyRows, r.historyWant)
	verdict := "clean"
	if !r.report.OK() {
		verdict = "VIOLATIONS:\n" + r.report.String()
	}
	fmt.Fprintf(w, "verify    invariants %s\n", strings.TrimSpace(verdict))
	if err := r.broken(); err != nil {
		fmt.Fprintf(w, "\nFAILED: %v\n", err)
	}
}

// broken names the first promise the run did not keep.
func (r *demoResult) broken() error {
	var errs []error
	if r.lost > 0 || r.duplicates > 0 {
		errs = append(errs, fmt.Errorf("%d messages lost, %d duplicated", r.lost, r.duplicates))
	}
	if r.mentionsFirst != r.mentionsExpected {
		errs = append(errs, fmt.Errorf("%d of %d mentions in the first answer", r.mentionsFirst, r.mentionsExpected))
	}
	if r.unreadAfterRead != 0 {
		errs = append(errs, fmt.Errorf("unread %d on the other device after a read", r.unreadAfterRead))
	}
	if r.historyRows != r.historyWant {
		errs = append(errs, fmt.Errorf("ClickHouse holds %d of %d records", r.historyRows, r.historyWant))
	}
	if r.report != nil && !r.report.OK() {
		errs = append(errs, errors.New("verify found violations"))
	}
	return errors.Join(errs...)
}
