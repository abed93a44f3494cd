package fanout

import (
	"testing"

	"github.com/offlinebox/offlinebox/internal/testenv"
	"github.com/offlinebox/offlinebox/schemas"
)

// The worker runs unchanged on a Redis Cluster of 3 masters: every script
// touches one hash slot, pipelines are split per node, and a node that
// has not seen a script yet gets it loaded.
func TestScenarioOnARedisClusterKeepsEveryInvariant(t *testing.T) {
	rdb, prefix := testenv.RedisCluster(t)
	_, addrs := testenv.Kafka(t, 4, schemas.TopicMessages, schemas.TopicSequenced, schemas.TopicDeadLetter)
	h := newHarnessOn(t, rdb, prefix, addrs, Config{Store: redisstoreConfigLarge(6)})
	f := h.fanout(nil)
	ms := scenario(9)
	recs := records(ms...)
	for _, p := range inPolls(recs, 11) {
		handle(t, f, p)
	}
	handle(t, f, recs) // a replay of everything
	members := users("m", 9)
	big := records(msg("lg", "create", members[0], join(members...)),
		msg("lg", "m2", members[1], mentions(members[2])), msg("lg", "all", members[3], mentionAll))
	handle(t, f, big)
	h.checkAll(distinctIDs(ms))
	if tr := h.checkInboxes("lg"); tr.largeFrom != 1 || tr.seq != 3 {
		t.Fatalf("large group on the cluster: large from %d, %d seqs", tr.largeFrom, tr.seq)
	}
	h.checkProduced(distinctIDs(ms))
}
