package push

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/offlinebox/offlinebox/promreg"
)

type metrics struct {
	pushes     *prometheus.CounterVec
	targets    *prometheus.CounterVec
	publishes  *prometheus.CounterVec
	lookups    prometheus.Counter
	memberRead prometheus.Counter
	skipped    *prometheus.CounterVec
	rounds     prometheus.Counter
	changed    prometheus.Counter
	// rejectionsKept counts refusals stored for their senders;
	// rejectionsNotKept those whose sender's list can never be written
	// (they are pushed all the same).
	rejectionsKept    prometheus.Counter
	rejectionsNotKept prometheus.Counter
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	s := promreg.On(reg)
	m := &metrics{
		pushes:            s.CounterVec("offlinebox_push_records_total", "Records the push stage handed to API nodes, by kind (push, ephemeral, rejected).", "kind"),
		targets:           s.CounterVec("offlinebox_push_targets_total", "Device connections named in envelopes, by kind; pushes on a conversation's channel name none.", "kind"),
		publishes:         s.CounterVec("offlinebox_push_publishes_total", "Pub/sub publishes, by channel kind (node; conv: a small conversation's channel; group: a large group's).", "channel"),
		lookups:           s.Counter("offlinebox_push_presence_lookups_total", "Users whose presence was read."),
		memberRead:        s.Counter("offlinebox_push_member_reads_total", "Member lists read from Redis (the cache missed or the membership changed)."),
		skipped:           s.CounterVec("offlinebox_push_skipped_total", "Records not pushed, by reason.", "reason"),
		rounds:            s.Counter("offlinebox_push_rounds_total", "Rounds of presence reads and publishes; the partitions handled together share one."),
		changed:           s.Counter("offlinebox_push_audience_changed_total", "Conversation batches not published on their channel because the conversation changed since the stage resolved it (it is read and resolved again)."),
		rejectionsKept:    s.Counter("offlinebox_push_rejections_kept_total", "Refusals of senders' records stored in their lists (GET /v1/rejections) before they were pushed; a replay of one kept already does not count."),
		rejectionsNotKept: s.Counter("offlinebox_push_rejections_not_kept_total", "Refusals that could not be stored in their sender's list because it can never be written (a key of the wrong type); they were still pushed."),
	}
	return m, s.Err()
}
