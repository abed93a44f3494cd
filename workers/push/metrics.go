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
	m := &metrics{
		pushes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "offlinebox_push_records_total", Help: "Records the push stage handed to API nodes, by kind (push, ephemeral, rejected).",
		}, []string{"kind"}),
		targets: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "offlinebox_push_targets_total", Help: "Device connections named in envelopes, by kind; pushes on a conversation's channel name none.",
		}, []string{"kind"}),
		publishes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "offlinebox_push_publishes_total", Help: "Pub/sub publishes, by channel kind (node; conv: a small conversation's channel; group: a large group's).",
		}, []string{"channel"}),
		lookups: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "offlinebox_push_presence_lookups_total", Help: "Users whose presence was read.",
		}),
		memberRead: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "offlinebox_push_member_reads_total", Help: "Member lists read from Redis (the cache missed or the membership changed).",
		}),
		skipped: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "offlinebox_push_skipped_total", Help: "Records not pushed, by reason.",
		}, []string{"reason"}),
		rounds: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "offlinebox_push_rounds_total", Help: "Rounds of presence reads and publishes; the partitions handled together share one.",
		}),
		changed: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "offlinebox_push_audience_changed_total", Help: "Conversation batches not published on their channel because the conversation changed since the stage resolved it (it is read and resolved again).",
		}),
		rejectionsKept: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "offlinebox_push_rejections_kept_total", Help: "Refusals of senders' records stored in their lists (GET /v1/rejections) before they were pushed; a replay of one kept already does not count.",
		}),
		rejectionsNotKept: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "offlinebox_push_rejections_not_kept_total", Help: "Refusals that could not be stored in their sender's list because it can never be written (a key of the wrong type); they were still pushed.",
		}),
	}
	if err := promreg.All(reg, m.pushes, m.targets, m.publishes, m.lookups, m.memberRead, m.skipped, m.rounds, m.changed, m.rejectionsKept, m.rejectionsNotKept); err != nil {
		return nil, err
	}
	return m, nil
}
