package streamtest_test

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/streamgen/streamgen/runtime"
	"github.com/streamgen/streamgen/runtime/streamtest"
)

type job struct {
	ID uint64 `json:"id"`
}

type invoice struct {
	ID          uint64 `json:"id"`
	AmountCents uint64 `json:"amount_cents"`
}

// calls records the metadata of every handler call.
type calls struct {
	mu  sync.Mutex
	got []runtime.Metadata
}

func (c *calls) add(md runtime.Metadata) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.got = append(c.got, md)
}

func (c *calls) list() []runtime.Metadata {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.got)
}

func (c *calls) len() int { return len(c.list()) }

var errJobFailed = errors.New("the job failed")

// failingJobs is the reference's job worker: every job fails and asks for
// another try in 30 seconds.
func failingJobs(rec *calls, policy runtime.Policy) runtime.Handler {
	return runtime.Handle("Job", policy, func(_ context.Context, j *job, md runtime.Metadata) runtime.Outcome {
		rec.add(md)
		return runtime.OutcomeOf(runtime.RetryAfter(30*time.Second, errJobFailed))
	})
}

// requireWarning fails t unless a warning with message msg names the
// subscription, the message id and a reason containing reason.
func requireWarning(t *testing.T, logs *streamtest.LogRecorder, msg, subscription, messageID, reason string) {
	t.Helper()
	for _, r := range logs.Find(slog.LevelWarn, msg) {
		if r.Attr("subscription") == subscription && r.Attr("message_id") == messageID && strings.Contains(r.Attr("reason"), reason) {
			return
		}
	}
	t.Fatalf("no warning %q naming subscription %q, message_id %q and reason %q; warnings: %v",
		msg, subscription, messageID, reason, warnings(logs))
}

func warnings(logs *streamtest.LogRecorder) []string {
	var out []string
	for _, r := range logs.Records() {
		if r.Level >= slog.LevelWarn {
			out = append(out, r.String())
		}
	}
	return out
}

func verdictKinds(ds []streamtest.Delivery) []streamtest.VerdictKind {
	out := make([]streamtest.VerdictKind, len(ds))
	for i, d := range ds {
		out[i] = d.Verdict.Kind
	}
	return out
}

func attempts(ds []streamtest.Delivery) []int {
	out := make([]int, len(ds))
	for i, d := range ds {
		out[i] = d.Attempt
	}
	return out
}
