package api

import "github.com/prometheus/client_golang/prometheus"

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
}

func newLiveMetrics(reg prometheus.Registerer) (*liveMetrics, error) {
	m := &liveMetrics{
		connections: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "offlinebox_live_connections", Help: "Live connections held by this API process.",
		}),
		refused: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "offlinebox_live_refused_total", Help: "Live connections refused, by reason (node_full, address_full, user_full, devices_full, unauthorized, revoked, store_down; api/asyncapi.yaml names the answer to each).",
		}, []string{"reason"}),
		replaced: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "offlinebox_live_replaced_total", Help: "Connections closed because a newer one of the same device opened.",
		}),
		pushes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "offlinebox_live_pushes_total", Help: "Stored messages pushed on live connections, by attempt (1 is the first push; more are re-pushes).",
		}, []string{"attempt"}),
		pushSkipped: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "offlinebox_live_push_skipped_total", Help: "Pushes not sent because the device had acked the message already.",
		}),
		acks: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "offlinebox_live_acks_total", Help: "Ack frames received on live connections.",
		}),
		fallbacks: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "offlinebox_live_fallbacks_total", Help: "Messages left to the device's next pull, by reason.",
		}, []string{"reason"}),
		pushToAck: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "offlinebox_live_push_to_ack_seconds", Help: "From the first push of a message to the device's ack of it.",
			Buckets: prometheus.ExponentialBuckets(0.001, 2.5, 14),
		}),
		busLatency: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "offlinebox_live_bus_seconds", Help: "From the push stage's publish to this node's dispatch.",
			Buckets: prometheus.ExponentialBuckets(0.0005, 2.5, 12),
		}),
		slowCloses: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "offlinebox_live_slow_consumer_closes_total", Help: "Connections closed because their send queue overflowed or a write timed out.",
		}),
		heartbeatCloses: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "offlinebox_live_heartbeat_closes_total", Help: "Connections closed because the client went silent.",
		}),
		ephemeral: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "offlinebox_live_ephemeral_total", Help: "QoS 0 frames (typing, presence) queued on connections.",
		}),
		ephemeralDropped: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "offlinebox_live_ephemeral_dropped_total", Help: "QoS 0 frames dropped because the connection was slow.",
		}),
		ephemeralRefused: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "offlinebox_live_ephemeral_refused_total", Help: "QoS 0 frames a client sent that were dropped or refused, by reason (conn_rate, user_rate, users_full, too_large, content_type).",
		}, []string{"reason"}),
		floodCloses: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "offlinebox_live_ephemeral_flood_closes_total", Help: "Connections closed because they kept sending QoS 0 frames over their budget.",
		}),
		receiptsSent: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "offlinebox_live_receipts_sent_total", Help: "Receipt events queued on senders' connections.",
		}),
		relisted: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "offlinebox_live_relisted_conversations_total", Help: "Conversations a connection was found not listening to, and followed and caught up on, when its conversations were read again after the node's own channel was resubscribed (what the push stage sent the node by name meanwhile was lost). Those whose catch-up did not fit the queue count as catch_up_full fallbacks instead.",
		}),
		resubscribed: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "offlinebox_live_bus_resubscriptions_total", Help: "Channels the bus resubscribed after its connection dropped (each one's listeners catch up).",
		}),
		receiptsCoalesced: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "offlinebox_live_receipts_coalesced_total", Help: "Receipt events that replaced one still queued for the same conversation.",
		}),
		notices: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "offlinebox_live_notices_total", Help: "Pull-before notices sent on connect, by outcome (pull, replay, nothing).",
		}, []string{"outcome"}),
		tokenCloses: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "offlinebox_live_token_closes_total", Help: "Connections closed because of their token, by reason (expired: exp plus the leeway passed without a reauth; revoked: its user or device was revoked).",
		}, []string{"reason"}),
		reauths: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "offlinebox_live_reauths_total", Help: "Reauth frames, by outcome (accepted, refused).",
		}, []string{"outcome"}),
	}
	m.firstPushes = m.pushes.WithLabelValues("1")
	var delivery []prometheus.Collector
	m.delivery, delivery = newDeliveryMetrics()
	if reg == nil {
		return m, nil
	}
	for _, c := range append(delivery, m.connections, m.refused, m.replaced, m.pushes, m.pushSkipped, m.acks, m.fallbacks,
		m.pushToAck, m.busLatency, m.slowCloses, m.heartbeatCloses, m.ephemeral, m.ephemeralDropped, m.ephemeralRefused, m.floodCloses, m.receiptsSent, m.resubscribed, m.relisted,
		m.receiptsCoalesced, m.notices, m.tokenCloses, m.reauths) {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return m, nil
}
