package fanout

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/offlinebox/offlinebox/promreg"
)

// restoreMetrics are the restore's series.
type restoreMetrics struct {
	runs      *prometheus.CounterVec
	records   prometheus.Counter
	conflicts prometheus.Counter
	held      prometheus.Counter
	// what failed for good while re-applying (as the dead-letter series
	// count it), logged, not dead-lettered: records by call, inbox updates
	unappliedRecords *prometheus.CounterVec
	unappliedUpdates prometheus.Counter
	// a server that evicted keys since it was verified (eviction.go)
	evictionsFound prometheus.Counter
	evictionHeld   prometheus.Gauge
}

func newRestoreMetrics(reg prometheus.Registerer) (*restoreMetrics, error) {
	s := promreg.On(reg)
	m := &restoreMetrics{
		runs: s.CounterVec("offlinebox_fanout_restores_total",
			"Restores of redis from im.sequenced, by result (done, unfinished: continued by the next batch).", "result"),
		records: s.Counter("offlinebox_fanout_restore_records_total", "Changelog records re-applied by restores."),
		conflicts: s.Counter("offlinebox_fanout_restore_conflicts_total",
			"Changelog records a restore could not put back exactly (logged; the conversation needs a rebuild)."),
		held: s.Counter("offlinebox_fanout_restore_held_total",
			"Conversations a restore held for a rebuild (sequencing refuses them until one; see the held key)."),
		unappliedRecords: s.CounterVec("offlinebox_fanout_restore_unapplied_records_total",
			"Changelog records a restore could not re-apply for good, by call (sequence, members, mark_large), "+
				"logged and not dead-lettered (the records are im.sequenced's); any increase needs an operator.", "call"),
		unappliedUpdates: s.Counter("offlinebox_fanout_restore_unapplied_inbox_updates_total",
			"Inbox updates a restore could not re-apply for good (a key of the wrong type), logged and not "+
				"dead-lettered; any increase needs an operator."),
		evictionsFound: s.Counter("offlinebox_fanout_evictions_found_total",
			"Redis servers found to have evicted keys since fanout verified them (evicted_keys rose): each holds sequencing on the store until offlinebox repair-evicted."),
		evictionHeld: s.Gauge("offlinebox_fanout_eviction_held",
			"1 while fanout sequences nothing because a Redis server evicted keys since it was verified (run offlinebox repair-evicted), else 0."),
	}
	return m, s.Err()
}
