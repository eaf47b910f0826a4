package main

import (
	"context"
	"errors"
	"flag"
	"io"
	"net"
	"net/http"
	"regexp"
	"strings"
	"testing"

	"go.uber.org/goleak"

	"github.com/streamgen/streamgen/examples/billing"
	"github.com/streamgen/streamgen/internal/testsupport/testkit"
	"github.com/streamgen/streamgen/runtime"
	"github.com/streamgen/streamgen/runtime/zeromq"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

var boundLine = regexp.MustCompile(`msg="zeromq: queue bound" subscription=(\S+) endpoint=(\S+)`)

func TestServiceChargesAJobAndServesItsCounters(t *testing.T) {
	testkit.RestoreDefaultLogger(t)
	var logs testkit.SyncBuffer
	svc := testkit.Start(t, func(ctx context.Context) error {
		return run(ctx, []string{
			"-jobs", "tcp://127.0.0.1:0", "-invoices", "tcp://127.0.0.1:0", "-dead", "tcp://127.0.0.1:0",
			"-metrics", "127.0.0.1:0",
		}, &logs)
	})
	testkit.Eventually(t, "three queues bound", func() bool { return len(boundLine.FindAllString(logs.String(), -1)) == 3 })
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
	if err := billing.PublishJob(t.Context(), sender, billing.Job{ID: 1, AmountCents: 1250}, runtime.WithMessageID("job-1")); err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, "the job charged", func() bool {
		return strings.Contains(logs.String(), `msg="job charged" subscription=jobs message_id=job-1 attempt=1 max_attempts=5 job=1 amount=12.50`)
	})

	url := testkit.MetricsURL(t, logs.String())
	testkit.WaitForMetrics(t, url, "the acked job in the metrics",
		`streamgen_settled_total{broker="zeromq",message_type="Job",outcome="acked",subscription="jobs"} 1`)
	client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	for _, req := range []struct {
		method, url string
		want        int
	}{
		{http.MethodPost, url, http.StatusMethodNotAllowed},
		{http.MethodGet, strings.TrimSuffix(url, "metrics") + "other", http.StatusNotFound},
	} {
		r, err := http.NewRequestWithContext(t.Context(), req.method, req.url, nil)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := client.Do(r)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != req.want {
			t.Errorf("%s %s = %d, want %d", req.method, req.url, resp.StatusCode, req.want)
		}
	}

	svc.Stop()
	if _, err := client.Get(url); err == nil {
		t.Errorf("GET %s answered after the service stopped", url)
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
	testkit.RestoreDefaultLogger(t)
	err := run(context.Background(), []string{"-jobs", "udp://127.0.0.1:1"}, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "jobs") {
		t.Fatalf("run with a bad endpoint = %v, want an error naming the jobs queue", err)
	}
}

// A -metrics address that is taken stops the service before it starts,
// with the listen error.
func TestMetricsOnAnAddressInUseFails(t *testing.T) {
	testkit.RestoreDefaultLogger(t)
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	var logs testkit.SyncBuffer
	err = run(t.Context(), []string{
		"-jobs", "tcp://127.0.0.1:0", "-invoices", "tcp://127.0.0.1:0", "-dead", "tcp://127.0.0.1:0",
		"-metrics", taken.Addr().String(),
	}, &logs)
	var opErr *net.OpError
	if !errors.As(err, &opErr) || !strings.HasPrefix(err.Error(), "serve metrics: ") {
		t.Errorf("run = %v, want the listen error", err)
	}
	if strings.Contains(logs.String(), "queue bound") {
		t.Errorf("the service started although its metrics address was taken:\n%s", logs.String())
	}
}
