package checker

import (
	"fmt"
	"slices"
)

// Delivery is what devices stored against what they are owed, the
// counts every report of the checker and the fault suites carries.
type Delivery struct {
	// Expected: seqs a device's user is owed (member at the end);
	// Delivered: those it stored; Lost: those it did not.
	Expected  int `json:"expected"`
	Delivered int `json:"delivered"`
	Lost      int `json:"lost"`
	// Duplicates: one client_msg_id stored under more than one seq.
	Duplicates int `json:"duplicates"`
	// OutOfOrder: a message stored under another seq than the log's
	// order gives it, slices not ascending and contiguous, a seq that
	// changed its message.
	OutOfOrder int `json:"out_of_order"`
	// Unexpected: stored messages the user is not entitled to (before
	// joining, after leaving, other conversations, QoS 0, poison).
	Unexpected int `json:"unexpected"`
}

// Add sums o into d.
func (d *Delivery) Add(o Delivery) {
	d.Expected += o.Expected
	d.Delivered += o.Delivered
	d.Lost += o.Lost
	d.Duplicates += o.Duplicates
	d.OutOfOrder += o.OutOfOrder
	d.Unexpected += o.Unexpected
}

// DeviceReport is what one device holds against what it is owed.
type DeviceReport struct {
	User   string `json:"user"`
	Device string `json:"device"`
	Delivery
	// Redelivered: received again although stored (allowed).
	Redelivered int         `json:"redelivered"`
	Stats       DeviceStats `json:"stats"`
}

// Report compares what was produced with what every device stored.
type Report struct {
	// Sent is the distinct stored records (messages and membership
	// changes) in im.messages; Records every record there.
	Sent       int `json:"sent"`
	Records    int `json:"records"`
	Resends    int `json:"resends"`
	AtMostOnce int `json:"at_most_once"`
	Invalid    int `json:"invalid"`
	// Refused: records the group's authority refuses (dead-lettered too).
	Refused   int `json:"refused"`
	APISent   int `json:"api_sent"`
	APIResent int `json:"api_resent"`
	Delivery
	Redelivered int `json:"redelivered"`
	// NotInLog: generated records the log does not hold (the load
	// generator gave up on them).
	NotInLog         int `json:"not_in_log"`
	CrashBeforeStore int `json:"crash_before_store"`
	CrashBeforeAck   int `json:"crash_before_ack"`
	Syncs            int `json:"syncs"`
	Overloaded       int `json:"overloaded_503"`
	// Live channel: connections opened and dropped, pushes received.
	LiveSessions int `json:"live_sessions"`
	LiveDrops    int `json:"live_drops"`
	Pushed       int `json:"pushed"`
	// Problems are the first few findings, for a person.
	Problems []string       `json:"problems,omitempty"`
	Devices  []DeviceReport `json:"-"`
	// MaxSeq of every conversation, to compare with the history store.
	MaxSeq map[string]uint64 `json:"-"`
	// Placed is every (conversation, epoch, seq) any device stored, with
	// the client_msg_ids it stored there (more than one breaks a promise).
	Placed map[Place]map[string]bool `json:"-"`
}

// OK reports that nothing was lost, stored twice, misplaced or leaked.
func (r *Report) OK() bool {
	return r.Lost == 0 && r.Duplicates == 0 && r.OutOfOrder == 0 && r.Unexpected == 0 && r.NotInLog == 0
}

func (r *Report) problem(format string, args ...any) {
	if len(r.Problems) < 30 {
		r.Problems = append(r.Problems, fmt.Sprintf(format, args...))
	}
}

// account compares each device's store with the truth.
func account(t *Truth, w *Workload, devices []*device) *Report {
	r := &Report{Sent: t.Stored, Records: t.Records, Resends: t.Resends, AtMostOnce: t.AtMostOnce, Invalid: t.Invalid,
		Refused: t.Refused,
		MaxSeq:  map[string]uint64{}, Placed: map[Place]map[string]bool{}}
	for id, c := range t.Convs {
		r.MaxSeq[id] = uint64(len(c.IDs))
	}
	r.NotInLog = notInLog(t, w, devices, r)
	for _, d := range devices {
		for conv, hc := range d.st.convs {
			for at, id := range hc.msgs {
				p := Place{Conv: conv, Epoch: at.Epoch, Seq: at.Seq}
				if r.Placed[p] == nil {
					r.Placed[p] = map[string]bool{}
				}
				r.Placed[p][id] = true
			}
		}
		dr := accountDevice(t, d, r)
		r.Devices = append(r.Devices, dr)
		r.Delivery.Add(dr.Delivery)
		r.Redelivered += dr.Redelivered
		r.CrashBeforeStore += dr.Stats.CrashBeforeStore
		r.CrashBeforeAck += dr.Stats.CrashBeforeAck
		r.Syncs += dr.Stats.Syncs
		r.Overloaded += dr.Stats.Overloaded
		r.LiveSessions += dr.Stats.LiveSessions
		r.LiveDrops += dr.Stats.LiveDrops
		r.Pushed += dr.Stats.Pushed
		r.APISent += dr.Stats.Sent
		r.APIResent += dr.Stats.Resent
		for _, p := range d.st.problems {
			r.problem("%s/%s: %s", d.User, d.ID, p)
		}
		if dr.Stats.FinalCatchUpError != "" {
			r.problem("%s/%s: final catch-up failed: %s", d.User, d.ID, dr.Stats.FinalCatchUpError)
		}
	}
	return r
}

// notInLog counts generated stored records, and messages the API
// accepted, whose id the log lacks.
func notInLog(t *Truth, w *Workload, devices []*device, r *Report) int {
	n := 0
	check := func(conv, id string) {
		if c := t.Convs[conv]; c == nil || (c.Seq[id] == 0 && c.Refused[id] == "") {
			n++
			r.problem("%s %s was generated but is not in %s", conv, id, "im.messages")
		}
	}
	for _, items := range [][]Item{w.Setup, w.Stream} {
		for _, it := range items {
			if it.Msg != nil && it.Msg.Stored() {
				check(it.Msg.GetConvId(), it.Msg.GetClientMsgId())
			}
		}
	}
	for _, d := range devices {
		for _, m := range d.accepted {
			check(m.GetConvId(), m.GetClientMsgId())
		}
	}
	return n
}

func accountDevice(t *Truth, d *device, r *Report) DeviceReport {
	dr := DeviceReport{User: d.User, Device: d.ID, Redelivered: d.st.redelivered, Delivery: Delivery{OutOfOrder: d.st.misordered}, Stats: d.stats}
	owed := t.For(d.User)
	for _, conv := range sortedConvs(owed, d.st.convs) {
		c, e, held := t.Convs[conv], owed[conv], d.st.conv(conv)
		if e.Required != nil {
			seqs := map[uint64]bool{}
			for at := range held.msgs {
				seqs[at.Seq] = true
			}
			for s := e.Required.From + 1; s < e.Required.To; s++ {
				dr.Expected++
				if seqs[s] {
					dr.Delivered++
				} else {
					dr.Lost++
					r.problem("%s/%s lost %s seq %d (%s)", d.User, d.ID, conv, s, c.IDs[s-1])
				}
			}
		}
		// The log numbers one timeline; a rebuild from a history that
		// lost nothing keeps its seqs, so every epoch's positions are
		// checked against it. One id twice in one epoch is a duplicate;
		// in two epochs it is the message both share.
		type idIn struct {
			id    string
			epoch uint64
		}
		seen := map[idIn]uint64{}
		for at, id := range held.msgs {
			s := at.Seq
			if prev, dup := seen[idIn{id, at.Epoch}]; dup {
				dr.Duplicates++
				r.problem("%s/%s holds %s %s at seqs %d and %d", d.User, d.ID, conv, id, prev, s)
			}
			seen[idIn{id, at.Epoch}] = s
			switch {
			case c == nil || s == 0 || s > uint64(len(c.IDs)):
				dr.Unexpected++
				r.problem("%s/%s holds %s seq %d the log does not have", d.User, d.ID, conv, s)
			case c.IDs[s-1] != id:
				dr.OutOfOrder++
				r.problem("%s/%s holds %s as %s seq %d, the log's order makes it %s", d.User, d.ID, id, conv, s, c.IDs[s-1])
			case !e.Required.has(s) && !anyHas(e.Optional, s):
				dr.Unexpected++
				r.problem("%s/%s holds %s seq %d outside its membership", d.User, d.ID, conv, s)
			}
		}
		// A slice may step over seqs only where the user was no member.
		for _, sk := range held.skipped {
			for s := sk[0]; s <= sk[1]; s++ {
				if e.Required.has(s) || anyHas(e.Optional, s) {
					dr.OutOfOrder++
					r.problem("%s/%s: a %s slice skipped seqs %d..%d, and it was owed %d", d.User, d.ID, conv, sk[0], sk[1], s)
					break
				}
			}
		}
	}
	return dr
}

func (s *Span) has(seq uint64) bool { return s != nil && seq > s.From && seq < s.To }

func anyHas(spans []Span, seq uint64) bool {
	for i := range spans {
		if spans[i].has(seq) {
			return true
		}
	}
	return false
}

func sortedConvs(owed map[string]Entitlement, held map[string]*heldConv) []string {
	var out []string
	for c := range owed {
		out = append(out, c)
	}
	for c := range held {
		if _, ok := owed[c]; !ok {
			out = append(out, c)
		}
	}
	slices.Sort(out)
	return out
}
