package live

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/offlinebox/offlinebox/promreg"
)

// liveMetrics are the live channel's series.
type liveMetrics struct {
	connections       prometheus.Gauge
	refused           *prometheus.CounterVec
	replaced          prometheus.Counter
	pushes            *prometheus.CounterVec
	firstPushes       prometheus.Counter
	pushSkipped       prometheus.Counter
	acks              prometheus.Counter
	fallbacks         *prometheus.CounterVec
	pushToAck         prometheus.Histogram
	busLatency        prometheus.Histogram
	slowCloses        prometheus.Counter
	heartbeatCloses   prometheus.Counter
	ephemeral         prometheus.Counter
	ephemeralDropped  prometheus.Counter
	ephemeralRefused  *prometheus.CounterVec
	floodCloses       prometheus.Counter
	receiptsSent      prometheus.Counter
	resubscribed      prometheus.Counter
	relisted          prometheus.Counter
	receiptsCoalesced prometheus.Counter
	notices           *prometheus.CounterVec
	tokenCloses       *prometheus.CounterVec
	reauths           *prometheus.CounterVec
	delivery          *deliveryMetrics
	ackFlush          *ackFlushMetrics
}

func newLiveMetrics(reg prometheus.Registerer) (*liveMetrics, error) {
	s := promreg.On(reg)
	delivery, collectors := newDeliveryMetrics()
	s.Add(collectors...)
	m := &liveMetrics{
		delivery:    delivery,
		connections: s.Gauge("offlinebox_live_connections", "Live connections held by this API process."),
		refused:     s.CounterVec("offlinebox_live_refused_total", "Live connections refused, by reason (node_full, address_full, user_full, devices_full, unauthorized, revoked, store_down; api/asyncapi.yaml names the answer to each).", "reason"),
		replaced:    s.Counter("offlinebox_live_replaced_total", "Connections closed because a newer one of the same device opened."),
		pushes:      s.CounterVec("offlinebox_live_pushes_total", "Stored messages pushed on live connections, by attempt (1 is the first push; more are re-pushes).", "attempt"),
		pushSkipped: s.Counter("offlinebox_live_push_skipped_total", "Pushes not sent because the device had acked the message already."),
		acks:        s.Counter("offlinebox_live_acks_total", "Ack frames received on live connections."),
		fallbacks:   s.CounterVec("offlinebox_live_fallbacks_total", "Messages left to the device's next pull, by reason.", "reason"),
		pushToAck: s.Histogram("offlinebox_live_push_to_ack_seconds", "From the first push of a message to the device's ack of it.",
			prometheus.ExponentialBuckets(0.001, 2.5, 14)),
		busLatency: s.Histogram("offlinebox_live_bus_seconds", "From the push stage's publish to this node's dispatch.",
			prometheus.ExponentialBuckets(0.0005, 2.5, 12)),
		slowCloses:        s.Counter("offlinebox_live_slow_consumer_closes_total", "Connections closed because their send queue overflowed or a write timed out."),
		heartbeatCloses:   s.Counter("offlinebox_live_heartbeat_closes_total", "Connections closed because the client went silent."),
		ephemeral:         s.Counter("offlinebox_live_ephemeral_total", "QoS 0 frames (typing, presence) queued on connections."),
		ephemeralDropped:  s.Counter("offlinebox_live_ephemeral_dropped_total", "QoS 0 frames dropped because the connection was slow."),
		ephemeralRefused:  s.CounterVec("offlinebox_live_ephemeral_refused_total", "QoS 0 frames a client sent that were dropped or refused, by reason (conn_rate, user_rate, users_full, too_large, content_type).", "reason"),
		floodCloses:       s.Counter("offlinebox_live_ephemeral_flood_closes_total", "Connections closed because they kept sending QoS 0 frames over their budget."),
		receiptsSent:      s.Counter("offlinebox_live_receipts_sent_total", "Receipt events queued on senders' connections."),
		relisted:          s.Counter("offlinebox_live_relisted_conversations_total", "Conversations a connection was found not listening to, and followed and caught up on, when its conversations were read again after the node's own channel was resubscribed (what the push stage sent the node by name meanwhile was lost). Those whose catch-up did not fit the queue count as catch_up_full fallbacks instead."),
		resubscribed:      s.Counter("offlinebox_live_bus_resubscriptions_total", "Channels the bus resubscribed after its connection dropped (each one's listeners catch up)."),
		receiptsCoalesced: s.Counter("offlinebox_live_receipts_coalesced_total", "Receipt events that replaced one still queued for the same conversation."),
		notices:           s.CounterVec("offlinebox_live_notices_total", "Pull-before notices sent on connect, by outcome (pull, replay, nothing).", "outcome"),
		tokenCloses:       s.CounterVec("offlinebox_live_token_closes_total", "Connections closed because of their token, by reason (expired: exp plus the leeway passed without a reauth; revoked: its user or device was revoked).", "reason"),
		reauths:           s.CounterVec("offlinebox_live_reauths_total", "Reauth frames, by outcome (accepted, refused).", "outcome"),
	}
	m.firstPushes = m.pushes.WithLabelValues("1")
	m.ackFlush = newAckFlushMetrics(s)
	if err := s.Err(); err != nil {
		return nil, fmt.Errorf("api: register live metrics: %w", err)
	}
	return m, nil
}
