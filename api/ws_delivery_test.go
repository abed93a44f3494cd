package api

import (
	"context"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	obclient "github.com/offlinebox/offlinebox/client"
)

// TestDeliveryMetricsMoveWhenADeviceAcksAPush drives a running server: a
// message pushed to an online device waits for its ack in the pending
// gauge, and the device's ack moves the write-to-ack histogram and the
// confirmed-within counters and empties the gauge.
func TestDeliveryMetricsMoveWhenADeviceAcksAPush(t *testing.T) {
	reg := prometheus.NewRegistry()
	le := newLiveEnvWith(t, Config{}, reg)
	bob := le.device(0, "bob", "phone")
	bob.connect()
	read := func() (pending, confirms, within1m float64) {
		mfs, err := reg.Gather()
		if err != nil {
			t.Fatal(err)
		}
		for _, mf := range mfs {
			for _, m := range mf.GetMetric() {
				switch mf.GetName() {
				case "offlinebox_live_pending_pushes":
					pending = m.GetGauge().GetValue()
				case "offlinebox_delivery_confirm_seconds":
					confirms = float64(m.GetHistogram().GetSampleCount())
				case "offlinebox_delivery_confirmed_within_total":
					if m.GetLabel()[0].GetValue() == "1m" {
						within1m = m.GetCounter().GetValue()
					}
				}
			}
		}
		return
	}
	le.produce(textMsg(liveDM, "dm-1", "alice", toPeer("bob")))
	f := bob.until("message", func(f obclient.Frame) bool { return true })
	if p, c, w := read(); p != 1 || c != 0 || w != 0 {
		t.Fatalf("pushed, not acked: pending %v, confirmations %v, within 1m %v; want 1, 0, 0", p, c, w)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := bob.live.Ack(ctx, []obclient.AckItem{{ConvID: liveDM, Seq: f.Message.Seq, Epoch: f.Message.Epoch}}, true); err != nil {
		t.Fatal(err)
	}
	bob.next("acked")
	if p, c, w := read(); p != 0 || c != 1 || w != 1 {
		t.Fatalf("acked: pending %v, confirmations %v, within 1m %v; want 0, 1, 1", p, c, w)
	}
}
