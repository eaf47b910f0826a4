package rows_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/streamgen/streamgen/examples/rows"
	"github.com/streamgen/streamgen/runtime"
	"github.com/streamgen/streamgen/runtime/streamtest"
)

// start runs the worker in process, on the emulated RabbitMQ broker,
// mounted by the generated Mount.
func start(t *testing.T) (*streamtest.Harness, *rows.Table) {
	t.Helper()
	table := &rows.Table{}
	h := streamtest.New(t, runtime.RabbitMQ, streamtest.WithAppName("rows"), streamtest.WithQuietLogs())
	rows.Mount(h.App(), h.Broker(), &rows.Store{Table: table})
	h.Start()
	return h, table
}

func publish(t *testing.T, h *streamtest.Harness, id string, r rows.Reading) {
	t.Helper()
	if err := rows.PublishReading(t.Context(), h.Broker(), r, runtime.WithMessageID(id)); err != nil {
		t.Fatal(err)
	}
}

// The readings of a batch are written in one insert; the one without a
// meter is parked alone on readings.dead, with its own reason, and the
// others are acknowledged.
func TestBatchIsOneInsertAndABadReadingIsParkedAlone(t *testing.T) {
	h, table := start(t)
	publish(t, h, "r-1", rows.Reading{Meter: "m-1", Value: 1.5})
	publish(t, h, "r-2", rows.Reading{Value: 2})
	publish(t, h, "r-3", rows.Reading{Meter: "m-3", Value: 3})
	publish(t, h, "r-4", rows.Reading{Meter: "m-4", Value: 4})
	h.Wait() // the good readings wait in a batch that is not full
	if _, inserts := table.Rows(); inserts != 0 {
		t.Fatalf("%d inserts before batch_wait passed, want none", inserts)
	}
	h.Advance(50 * time.Millisecond) // batch_wait=50ms

	written, inserts := table.Rows()
	if inserts != 1 || len(written) != 3 {
		t.Fatalf("%d inserts wrote %v, want one insert of the 3 readings with a meter", inserts, written)
	}
	dead := h.Queue("readings.dead")
	if len(dead) != 1 || dead[0].ID != "r-2" || !strings.Contains(dead[0].Headers[runtime.HeaderDeadLetterReason], "reading r-2 has no meter") {
		t.Fatalf("readings.dead holds %v, want r-2 with its own reason", dead)
	}
	st := h.App().Stats()
	if i := slices.IndexFunc(st, func(s runtime.SubscriptionStats) bool { return s.Subscription == "readings" }); i < 0 || st[i].Acked != 3 || st[i].Parked != 1 {
		t.Errorf("counters %+v, want 3 acked and 1 parked", st)
	}
}

// When the insert fails, every reading of the batch is retried on its
// own, after the retry delay, and written on its second attempt.
func TestFailedInsertRetriesEveryReading(t *testing.T) {
	h, table := start(t)
	table.FailNext(1)
	for i := range 3 {
		publish(t, h, fmt.Sprintf("r-%d", i), rows.Reading{Meter: "m", Value: float64(i)})
	}
	h.Advance(50 * time.Millisecond) // batch_wait=50ms
	if written, inserts := table.Rows(); len(written) != 0 || inserts != 1 {
		t.Fatalf("%d inserts wrote %v, want one that failed", inserts, written)
	}
	h.Advance(time.Second + 50*time.Millisecond) // retry_delay=1s, then the retried readings' batch_wait
	written, _ := table.Rows()
	if len(written) != 3 {
		t.Fatalf("written %v after the retry, want the 3 readings", written)
	}
	for _, d := range h.Deliveries("readings") {
		if d.Attempt == 1 && d.Verdict.Kind != streamtest.VerdictRetry || d.Attempt == 2 && d.Verdict.Kind != streamtest.VerdictAck {
			t.Errorf("%s on attempt %d: %v", d.MessageID, d.Attempt, d.Verdict.Kind)
		}
	}
	if n := len(h.Deliveries("readings")); n != 6 {
		t.Errorf("%d deliveries, want 6: each reading twice", n)
	}
}
