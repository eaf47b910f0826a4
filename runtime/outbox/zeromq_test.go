package outbox_test

import (
	"context"
	"database/sql"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/streamgen/streamgen/internal/testsupport/testkit"
	"github.com/streamgen/streamgen/runtime"
	"github.com/streamgen/streamgen/runtime/outbox"
	"github.com/streamgen/streamgen/runtime/streamtest"
	"github.com/streamgen/streamgen/runtime/zeromq"
)

// The relay publishes through ZeroMQ too: an App whose subscription binds
// a queue, with ob.Option on the same broker, handles what is committed,
// in order, and nothing rolled back.
func TestRelayOverZeroMQ(t *testing.T) {
	databases(t, func(t *testing.T, db *sql.DB) {
		ob := open(t, db, outbox.WithPollInterval(20*time.Millisecond))
		zq := zeromq.New(zeromq.Queue("jobs", zeromq.Bind("tcp://127.0.0.1:0")))
		var mu sync.Mutex
		var handled []string
		app := runtime.NewApp("billing", ob.Option(zq))
		app.Mount(zq, &runtime.Subscription{Name: "jobs", Broker: runtime.ZeroMQ, Handlers: []runtime.Handler{
			runtime.Handle("OrderPlaced", runtime.Policy{}, func(_ context.Context, _ *order, md runtime.Metadata) runtime.Outcome {
				mu.Lock()
				defer mu.Unlock()
				handled = append(handled, md.MessageID)
				return runtime.Ack()
			}),
		}})
		streamtest.RunApp(t, app)
		commit(t, db, ob, false, msgs("jobs", "a", 30)...)
		commit(t, db, ob, true, msgs("jobs", "rolled-back", 5)...)
		commit(t, db, ob, false, msgs("jobs", "b", 20)...)
		want := append(idsOf(msgs("jobs", "a", 30)), idsOf(msgs("jobs", "b", 20))...)
		testkit.Eventually(t, "50 messages handled", func() bool {
			mu.Lock()
			defer mu.Unlock()
			return len(handled) >= len(want)
		})
		mu.Lock()
		defer mu.Unlock()
		if !slices.Equal(handled, want) {
			t.Errorf("handled %v\nwant %v", handled, want)
		}
		testkit.Eventually(t, "the table to empty", func() bool { return rowsLeft(t, db) == 0 })
	})
}
