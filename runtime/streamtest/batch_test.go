package streamtest_test

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/streamgen/streamgen/runtime"
	"github.com/streamgen/streamgen/runtime/streamtest"
)

// A batch that is not full waits its batch_wait on the harness's clock:
// the broker is idle while it waits, and Advance past the wait releases
// it, in one call with the messages it holds.
func TestHarnessBatchWaitRunsOnTheClock(t *testing.T) {
	for _, kind := range []runtime.BrokerKind{runtime.ZeroMQ, runtime.RabbitMQ} {
		t.Run(string(kind), func(t *testing.T) {
			var mu sync.Mutex
			var got [][]uint64
			h := streamtest.New(t, kind, streamtest.WithQuietLogs(), streamtest.WithWaitTimeout(10*time.Second))
			h.App().Mount(h.Broker(), &runtime.Subscription{Name: "rows", BatchSize: 10, BatchWait: time.Minute, Handlers: []runtime.Handler{
				runtime.HandleBatch[job]("Job", runtime.Policy{}, nil, func(_ context.Context, jobs []job) error {
					ids := make([]uint64, len(jobs))
					for i, j := range jobs {
						ids[i] = j.ID
					}
					mu.Lock()
					got = append(got, ids)
					mu.Unlock()
					return nil
				}),
			}})
			h.Start()
			h.Publish("rows", "Job", job{ID: 1})
			h.Publish("rows", "Job", job{ID: 2})
			h.Wait() // both wait in the batch, for more or for its minute
			mu.Lock()
			before := len(got)
			mu.Unlock()
			if before != 0 {
				t.Fatalf("%d calls before the batch's wait passed, want none", before)
			}
			h.Advance(2 * time.Minute)
			mu.Lock()
			calls := slices.Clone(got)
			mu.Unlock()
			if len(calls) != 1 || !slices.Equal(slices.Sorted(slices.Values(calls[0])), []uint64{1, 2}) {
				t.Fatalf("calls %v after the wait, want one with jobs 1 and 2 (two workers join the batch in either order)", calls)
			}
			ds := h.Deliveries("rows")
			if len(ds) != 2 || ds[0].Verdict.Kind != streamtest.VerdictAck || ds[1].Verdict.Kind != streamtest.VerdictAck {
				t.Errorf("deliveries %v, want two acks", verdictKinds(ds))
			}
			if !ds[0].Time.Equal(streamtest.DefaultStart().Add(time.Minute)) {
				t.Errorf("settled at %v, want when the minute passed", ds[0].Time)
			}
		})
	}
}
