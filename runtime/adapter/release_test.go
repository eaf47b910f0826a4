package adapter_test

import (
	"testing"

	"github.com/streamgen/streamgen/runtime"
	"github.com/streamgen/streamgen/runtime/adapter"
	"github.com/streamgen/streamgen/runtime/internal/counters"
)

// Release hands an unstarted delivery back through the Acknowledger's
// Release (not Requeue, which a delivery limit counts), and counts it as
// delivered and released; with ack=auto it is lost, and counted as a
// verdict that could not be carried out.
func TestReleaseHandsBackThroughTheAcknowledgerAndCounts(t *testing.T) {
	for _, auto := range []bool{false, true} {
		t.Run(map[bool]string{false: "manual", true: "auto"}[auto], func(t *testing.T) {
			sub := &runtime.Subscription{Name: "jobs", AutoAck: auto, Handlers: []runtime.Handler{(&probe{}).handler("Job", runtime.Policy{MaxAttempts: 3})}}
			m := counters.NewSet()
			tr := &recorder{}
			c := adapter.NewConsumer(sub, runtime.Env{Metrics: m}, adapter.Rules{Kind: runtime.RabbitMQ}, tr)
			v := c.Release(t.Context(), delivery(2))
			want, kind, released, failed := "release", adapter.VerdictRelease, int64(1), int64(0)
			if auto {
				want, kind, released, failed = "", adapter.VerdictDrop, 0, 1
			}
			if got := tr.actions(); got != want {
				t.Errorf("transport did %q, want %q", got, want)
			}
			if v.Kind != kind || v.Attempt != 2 || v.MaxAttempts != 3 || v.MessageType != "Job" {
				t.Errorf("verdict %+v, want attempt 2 of 3 of a Job", v)
			}
			snap := m.Snapshot()
			if len(snap) != 1 || snap[0].Delivered != 1 || snap[0].Released != released || snap[0].Failed != failed || snap[0].Acked != 0 {
				t.Errorf("counters %+v, want one delivered, %d released, %d failed", snap, released, failed)
			}
		})
	}
}
