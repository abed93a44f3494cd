package api

import (
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/offlinebox/offlinebox/schemas"
)

// founding is the founding story scaled down: a VIP comes back to one noisy
// group far above the sync limit (mentioned early on), several small
// groups, direct messages and a large group with an @all.
type story struct {
	msgs []*schemas.Message
	// per conversation, in seq order (seq = index + 1)
	convs    map[string][]*schemas.Message
	order    []string
	mentions map[string]bool // "conv:seq" mentioning the VIP (or @all)
}

const vip = "vip"

func foundingStory() *story {
	s := &story{convs: map[string][]*schemas.Message{}, mentions: map[string]bool{}}
	add := func(m *schemas.Message) {
		if _, ok := s.convs[m.ConvId]; !ok {
			s.order = append(s.order, m.ConvId)
		}
		s.convs[m.ConvId] = append(s.convs[m.ConvId], m)
		seq := len(s.convs[m.ConvId])
		if m.Sender != vip && (slices.Contains(m.Mentions, vip) || m.MentionAll) {
			s.mentions[fmt.Sprintf("%s:%d", m.ConvId, seq)] = true
		}
		s.msgs = append(s.msgs, m)
	}
	crowd := []string{"u1", "u2", "u3", "u4"}
	add(founding("noisy", append(crowd[:1:1], vip, "u2", "u3", "u4")...))
	for i := range 400 {
		var opts []func(*schemas.Message)
		if i == 3 || i == 11 || i == 40 {
			opts = append(opts, mentioning(vip))
		}
		if i == 25 {
			opts = append(opts, mentioning("u3", vip))
		}
		// Long posts: the noisy group alone is worth several answers.
		opts = append(opts, padded(4500))
		add(textMsg("noisy", fmt.Sprint("n", i), crowd[i%len(crowd)], opts...))
		if i == 150 {
			s.smallTalk(add)
		}
	}
	big := []string{"u5", vip, "u1", "u2", "u3", "u4", "u6", "u7"}
	crowd = slices.DeleteFunc(slices.Clone(big), func(u string) bool { return u == vip })
	add(founding("all-hands", big...))
	for i := range 30 {
		var opts []func(*schemas.Message)
		if i == 5 {
			opts = append(opts, atAll)
		}
		if i == 9 {
			opts = append(opts, mentioning(vip))
		}
		add(textMsg("all-hands", fmt.Sprint("a", i), crowd[i%len(crowd)], opts...))
	}
	// The VIP's own message marks the conversation read up to it: a
	// mention below it is no longer pending.
	for k := range s.mentions {
		var conv string
		var seq int
		fmt.Sscanf(strings.Replace(k, ":", " ", 1), "%s %d", &conv, &seq)
		if uint64(seq) <= uint64(len(s.convs[conv]))-s.unread(conv) {
			delete(s.mentions, k)
		}
	}
	return s
}

// smallTalk adds the small groups and direct conversations.
func (s *story) smallTalk(add func(*schemas.Message)) {
	for g, n := range []int{3, 7, 12, 5} {
		conv := fmt.Sprint("g", g)
		add(founding(conv, fmt.Sprint("u", g+1), vip, "u6"))
		for i := range n {
			var opts []func(*schemas.Message)
			if conv == "g1" && i == 2 {
				opts = append(opts, mentioning(vip))
			}
			if conv == "g2" && i == 4 {
				opts = append(opts, atAll)
			}
			add(textMsg(conv, fmt.Sprint(conv, "-", i), []string{fmt.Sprint("u", g+1), "u6"}[i%2], opts...))
		}
	}
	for d, n := range []int{5, 2, 8} {
		peer := fmt.Sprint("u", d+1)
		conv := "dm-" + peer
		for i := range n {
			add(textMsg(conv, fmt.Sprint(conv, "-", i), peer, toPeer(vip)))
		}
		if d == 1 {
			add(textMsg(conv, conv+"-reply", vip, toPeer(peer)))
		}
	}
}

func padded(n int) func(*schemas.Message) {
	return func(m *schemas.Message) {
		m.Body = append(m.Body, strings.Repeat(" blah", n/5)...)
	}
}

// unread is what the VIP has not read: everything after their last own record.
func (s *story) unread(conv string) uint64 {
	ms := s.convs[conv]
	last := 0
	for i, m := range ms {
		if m.Sender == vip {
			last = i + 1
		}
	}
	var n uint64
	for _, m := range ms[last:] {
		// join and leave notices are no one's unread
		if k := m.GetKind(); k != schemas.Kind_KIND_MEMBER_JOIN && k != schemas.Kind_KIND_MEMBER_LEAVE {
			n++
		}
	}
	return n
}

// waitForPipeline waits until the VIP's list shows every conversation at
// its last seq with its preview: fanout and convindex are through.
func (e *env) waitForPipeline(s *story) {
	tok := e.token(vip, "")
	eventually(e.t, "the pipeline delivers the story", func() (bool, string) {
		var l conversationListJSON
		e.callOK(http.StatusOK, "GET", "/v1/conversations?limit=200", tok, nil, &l)
		if len(l.Conversations) != len(s.convs) {
			return false, fmt.Sprintf("%d conversations listed", len(l.Conversations))
		}
		for _, c := range l.Conversations {
			want := uint64(len(s.convs[c.ConvID]))
			if c.LastSeq != want || c.Preview == nil || c.Preview.Seq != want {
				return false, fmt.Sprintf("%s at %d (preview %+v), want %d", c.ConvID, c.LastSeq, c.Preview, want)
			}
		}
		return true, ""
	})
}

func TestFoundingScenarioCatchUpAfterDaysAway(t *testing.T) {
	e := newEnv(t, envOptions{threshold: 6})
	e.runPipeline()
	s := foundingStory()
	e.produce(s.msgs...)
	e.waitForPipeline(s)
	phone := newClient(e, vip, "phone", true)
	laptop := newClient(e, vip, "laptop", false)
	steps := []struct {
		name string
		run  func(t *testing.T)
	}{
		{"the list shows every conversation by activity with its counters", func(t *testing.T) { checkList(t, e, s) }},
		{"the first sync holds every mention, under the budget, by priority", func(t *testing.T) { checkFirstSync(t, e, s, phone) }},
		{"catching up page by page delivers every message once, in order", func(t *testing.T) {
			phone.catchUp(t)
			phone.checkHoldsAll(t, s)
			if phone.gaps == 0 {
				t.Fatal("the noisy group was never cut: no gap was paged through")
			}
		}},
		{"a second device catches up on its own cursors", func(t *testing.T) {
			// The phone's acks must not count for it.
			checkEveryMention(t, laptop.sync(t), s)
			laptop.catchUp(t)
			laptop.checkHoldsAll(t, s)
		}},
		{"a sixth device evicts the least recently used, which is told to resync", func(t *testing.T) { checkEviction(t, e, phone) }},
		{"reading on one device clears unread and mentions for all", func(t *testing.T) { checkReadClearsAll(t, e, s, laptop) }},
		{"another user can read none of it", func(t *testing.T) { checkIsolation(t, e) }},
	}
	// Each step builds on the state the previous ones left.
	for _, st := range steps {
		if !t.Run(st.name, st.run) {
			return
		}
	}
}

// checkList: the list shows every conversation by activity with its counters.
func checkList(t *testing.T, e *env, s *story) {
	t.Helper()
	var l conversationListJSON
	e.callOK(http.StatusOK, "GET", "/v1/conversations?limit=200", e.token(vip, ""), nil, &l)
	for i, c := range l.Conversations {
		if i > 0 && c.LastActiveMS > l.Conversations[i-1].LastActiveMS {
			t.Fatalf("%s listed after a less recent conversation", c.ConvID)
		}
		if c.Unread != s.unread(c.ConvID) {
			t.Errorf("%s unread %d, want %d", c.ConvID, c.Unread, s.unread(c.ConvID))
		}
		if want := s.mentionCount(c.ConvID); c.Mentions != want {
			t.Errorf("%s mentions %d, want %d", c.ConvID, c.Mentions, want)
		}
	}
	// Pages of 3 list the same conversations in the same order.
	var paged []string
	next := ""
	for range len(s.convs) {
		var p conversationListJSON
		e.callOK(http.StatusOK, "GET", "/v1/conversations?limit=3&cursor="+next, e.token(vip, ""), nil, &p)
		for _, c := range p.Conversations {
			paged = append(paged, c.ConvID)
		}
		if next = p.Next; next == "" {
			break
		}
	}
	var whole []string
	for _, c := range l.Conversations {
		whole = append(whole, c.ConvID)
	}
	if fmt.Sprint(paged) != fmt.Sprint(whole) || len(whole) != len(s.convs) {
		t.Fatalf("paged list %v, whole list %v", paged, whole)
	}
}

// checkFirstSync: the first sync holds every mention, stays under the
// budget, orders conversations by priority and is repeatable.
func checkFirstSync(t *testing.T, e *env, s *story, phone *client) {
	t.Helper()
	body := phone.syncBody()
	data := e.callOK(http.StatusOK, "POST", "/v1/sync", phone.token, body, nil)
	if len(data) > DefaultSyncBytes {
		t.Fatalf("first answer is %d bytes, over the budget of %d", len(data), DefaultSyncBytes)
	}
	first := decodeSync(t, data)
	checkEveryMention(t, first, s)
	checkPriority(t, first, s)
	// Groups' slices are capped in the first pass, so the noisy group (first
	// by its mentions) leaves room for every direct message.
	for _, conv := range s.order {
		if s.convs[conv][0].ConvType != schemas.ConvType_CONV_TYPE_DIRECT {
			continue
		}
		c := findConv(first, conv)
		if c == nil || len(c.Messages) != len(s.convs[conv]) || c.HasMore {
			t.Fatalf("direct conversation %s not whole in the first answer: %+v", conv, c)
		}
	}
	// The noisy group is far above the limit: it comes cut to its newest
	// messages with a gap naming the rest, or, when conversations of
	// higher priority (more recent, with mentions) took the budget, as a
	// summary to ask for next.
	if noisy := findConv(first, "noisy"); noisy != nil {
		if len(noisy.Messages) == 0 || len(noisy.Messages) > 20 || noisy.Gap == nil ||
			noisy.MaxSeq != uint64(len(s.convs["noisy"])) || noisy.Messages[len(noisy.Messages)-1].Seq != noisy.MaxSeq ||
			noisy.Gap.From != 1 || noisy.Gap.To+1 != noisy.Messages[0].Seq {
			t.Fatalf("noisy group not cut to its newest messages with a gap: %+v", noisy)
		}
	} else if !slices.ContainsFunc(first.Summaries, func(sm summaryJSON) bool { return sm.ConvID == "noisy" }) {
		t.Fatalf("noisy group neither answered nor summarised: %+v", first)
	}
	if noisy := findConv(first, "noisy"); len(first.Summaries) == 0 && (noisy == nil || noisy.Gap == nil) {
		t.Fatal("the story is meant to overflow the first answer's budget, but nothing was summarised or cut")
	}
	again := e.callOK(http.StatusOK, "POST", "/v1/sync", phone.token, body, nil)
	if string(again) != string(data) {
		t.Fatal("the same request was answered differently")
	}
}

// checkEveryMention: the answer brings every mention of the story, in
// the lane or in a slice (the lane does not repeat what slices carry),
// and the lane nothing else.
func checkEveryMention(t *testing.T, r tSync, s *story) {
	t.Helper()
	lane, all := r.mentionsOf(vip)
	for k := range s.mentions {
		if !all[k] {
			t.Fatalf("mention %s missing: lane %v, with the slices %v", k, sortedKeys(lane), sortedKeys(all))
		}
	}
	for k := range lane {
		if !s.mentions[k] {
			t.Fatalf("lane holds %s, not a mention of the story", k)
		}
	}
	if r.MentionsMore {
		t.Fatal("the story's few mentions did not fit one answer")
	}
}

// checkEviction: a sixth device evicts the least recently used one (the
// phone), which is told to resync when it returns.
func checkEviction(t *testing.T, e *env, phone *client) {
	t.Helper()
	var ack ackResponse
	for _, d := range []string{"d3", "d4", "d5", "d6"} {
		e.callOK(http.StatusOK, "POST", "/v1/ack", e.token(vip, d),
			map[string]any{"acks": []map[string]any{{"conv_id": "g0", "seq": 1}}}, &ack)
	}
	if fmt.Sprint(ack.EvictedDevices) != "[phone]" {
		t.Fatalf("sixth device evicted %v, want [phone]", ack.EvictedDevices)
	}
	res := phone.sync(t)
	if !res.Resync || len(res.Conversations) == 0 {
		t.Fatalf("evicted device not told to resync: %+v", res)
	}
	for _, c := range res.Conversations {
		if !c.Rebase || c.RebaseReason != "resync" {
			t.Fatalf("%s answered without a resync rebase", c.ConvID)
		}
	}
	e.callOK(http.StatusOK, "POST", "/v1/ack", phone.token,
		map[string]any{"device_id": "phone", "acks": []map[string]any{{"conv_id": "g0", "seq": 1}}}, &ack)
	if !ack.Resync {
		t.Fatal("the evicted device's ack did not say resync")
	}
}

// checkReadClearsAll: a read on one device clears unread and mentions as
// every device sees them.
func checkReadClearsAll(t *testing.T, e *env, s *story, laptop *client) {
	t.Helper()
	var rs []map[string]any
	for _, c := range s.order {
		rs = append(rs, map[string]any{"conv_id": c, "seq": len(s.convs[c])})
	}
	e.callOK(http.StatusAccepted, "POST", "/v1/read", laptop.token, map[string]any{"receipts": rs}, nil)
	for _, dev := range []string{"phone", "laptop", "d6"} {
		eventually(t, "unread cleared as seen by "+dev, func() (bool, string) {
			var l conversationListJSON
			e.callOK(http.StatusOK, "GET", "/v1/conversations?limit=200", e.token(vip, dev), nil, &l)
			for _, c := range l.Conversations {
				if c.Unread != 0 || c.Mentions != 0 {
					return false, fmt.Sprintf("%s unread %d mentions %d", c.ConvID, c.Unread, c.Mentions)
				}
			}
			return true, ""
		})
	}
	fresh := newClient(e, vip, "d7", false)
	if res := fresh.sync(t); len(res.Mentions) != 0 {
		t.Fatalf("read mentions still pending: %+v", res.Mentions)
	}
}

// checkIsolation: another user can read none of the VIP's conversations.
func checkIsolation(t *testing.T, e *env) {
	t.Helper()
	eve := e.token("eve", "eve-phone")
	cases := []struct {
		method, path string
		body         any
	}{
		{"GET", "/v1/conversations/noisy/messages?after=0", nil},
		{"GET", "/v1/conversations/dm-u1/messages", nil},
		{"POST", "/v1/ack", map[string]any{"acks": []map[string]any{{"conv_id": "noisy", "seq": 1}}}},
		{"POST", "/v1/read", map[string]any{"receipts": []map[string]any{{"conv_id": "dm-u1", "seq": 1}}}},
		{"POST", "/v1/messages", map[string]any{"client_msg_id": "x", "conv_id": "noisy", "conv_type": "group", "body": "aGk="}},
		{"POST", "/v1/sync", map[string]any{"device_id": "other", "cursors": map[string]any{}}},
	}
	for _, tc := range cases {
		if code, data := e.call(tc.method, tc.path, eve, tc.body); code != http.StatusForbidden {
			t.Errorf("%s %s as eve: %d %s, want 403", tc.method, tc.path, code, data)
		}
	}
	var res tSync
	e.callOK(http.StatusOK, "POST", "/v1/sync", eve, map[string]any{"cursors": map[string]any{"noisy": map[string]any{"seq": 0}}}, &res)
	var l conversationListJSON
	e.callOK(http.StatusOK, "GET", "/v1/conversations", eve, nil, &l)
	if len(res.Conversations)+len(res.Mentions)+len(res.Summaries)+len(l.Conversations) != 0 {
		t.Fatalf("eve sees someone else's conversations: %+v %+v", res, l)
	}
}

func (s *story) mentionCount(conv string) int {
	n := 0
	for k := range s.mentions {
		if len(k) > len(conv) && k[:len(conv)+1] == conv+":" {
			n++
		}
	}
	return n
}

// checkPriority: conversations with pending mentions first, then direct
// ones, then the rest.
func checkPriority(t *testing.T, r tSync, s *story) {
	t.Helper()
	rank := func(c tSyncConv) int {
		switch {
		case s.mentionCount(c.ConvID) > 0:
			return 0
		case c.Kind == "direct":
			return 1
		}
		return 2
	}
	for i := 1; i < len(r.Conversations); i++ {
		if rank(r.Conversations[i]) < rank(r.Conversations[i-1]) {
			t.Fatalf("%s comes after %s", r.Conversations[i].ConvID, r.Conversations[i-1].ConvID)
		}
	}
}

func findConv(r tSync, conv string) *tSyncConv {
	for i := range r.Conversations {
		if r.Conversations[i].ConvID == conv {
			return &r.Conversations[i]
		}
	}
	return nil
}
