package main

import (
	"context"
	"errors"
	"flag"
	"io"
	"log/slog"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/streamgen/streamgen/examples/billing"
	"github.com/streamgen/streamgen/runtime"
	"github.com/streamgen/streamgen/runtime/zeromq"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// syncBuffer collects what the service logs while the test reads it.
type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// eventually polls cond until it holds, failing the test after a generous
// deadline.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// restoreDefaultLogger undoes the slog.SetDefault of run.
func restoreDefaultLogger(t *testing.T) {
	previous := slog.Default()
	t.Cleanup(func() { slog.SetDefault(previous) })
}

var (
	boundLine   = regexp.MustCompile(`msg="zeromq: queue bound" subscription=(\S+) endpoint=(\S+)`)
	metricsLine = regexp.MustCompile(`msg="metrics served" url=(\S+)`)
)

func TestServiceChargesAJobAndServesItsCounters(t *testing.T) {
	restoreDefaultLogger(t)
	var logs syncBuffer
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{
			"-jobs", "tcp://127.0.0.1:0", "-invoices", "tcp://127.0.0.1:0", "-dead", "tcp://127.0.0.1:0",
			"-metrics", "127.0.0.1:0",
		}, &logs)
	}()
	eventually(t, "three queues bound", func() bool { return len(boundLine.FindAllString(logs.String(), -1)) == 3 })
	endpoints := map[string]string{}
	for _, m := range boundLine.FindAllStringSubmatch(logs.String(), -1) {
		endpoints[m[1]] = m[2]
	}
	if endpoints["jobs"] == "" || endpoints["invoices"] == "" || endpoints["invoices.dead"] == "" {
		t.Fatalf("bound endpoints %v, want jobs, invoices and invoices.dead", endpoints)
	}

	// A separate sender, as another service would be.
	sender := zeromq.New(zeromq.Queue("jobs", zeromq.Bind(endpoints["jobs"])))
	defer sender.Shutdown(context.Background())
	if err := billing.PublishJob(ctx, sender, billing.Job{ID: 1, AmountCents: 1250}, runtime.WithMessageID("job-1")); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the job charged", func() bool {
		return strings.Contains(logs.String(), `msg="job charged" subscription=jobs message_id=job-1 attempt=1 max_attempts=5 job=1 amount=12.50`)
	})

	m := metricsLine.FindStringSubmatch(logs.String())
	if m == nil {
		t.Fatalf("no metrics URL in the log:\n%s", logs.String())
	}
	client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	eventually(t, "the acked job in the metrics", func() bool {
		resp, err := client.Get(m[1])
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		return strings.Contains(string(body), `streamgen_settled_total{broker="zeromq",subscription="jobs",outcome="acked"} 1`)
	})

	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("run after a graceful stop: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the service did not stop within 30s of its context ending")
	}
}

func TestBadCommandLinesAreUsageErrors(t *testing.T) {
	for _, args := range [][]string{
		{"-nope"},
		{"-log-level", "loud"},
		{"extra"},
	} {
		err := run(context.Background(), args, io.Discard)
		var usage *usageError
		if !errors.As(err, &usage) {
			t.Errorf("run %q = %v, want a usage error", args, err)
		}
	}
	if err := run(context.Background(), []string{"-h"}, io.Discard); !errors.Is(err, flag.ErrHelp) {
		t.Errorf("run -h = %v, want flag.ErrHelp", err)
	}
}

func TestAnEndpointThatCannotBindStopsTheService(t *testing.T) {
	restoreDefaultLogger(t)
	err := run(context.Background(), []string{"-jobs", "udp://127.0.0.1:1"}, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "jobs") {
		t.Fatalf("run with a bad endpoint = %v, want an error naming the jobs queue", err)
	}
}
