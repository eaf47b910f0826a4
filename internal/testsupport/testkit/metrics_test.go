package testkit

import (
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
)

func TestMetricsURLReadsTheTextHandlersLine(t *testing.T) {
	var log strings.Builder
	logger := slog.New(slog.NewTextHandler(&log, nil))
	logger.Info("queue bound", "subscription", "jobs")
	logger.Info("metrics served", "url", "http://127.0.0.1:43210/metrics")
	if got := MetricsURL(t, log.String()); got != "http://127.0.0.1:43210/metrics" {
		t.Errorf("MetricsURL = %q", got)
	}
}

func TestMetricsURLFailsWithoutTheLine(t *testing.T) {
	r := &recordingTB{TB: t}
	r.inTest(func() {
		MetricsURL(r, `level=INFO msg="queue bound"`)
		t.Error("MetricsURL returned without a metrics line")
	})
	if got := r.end(); !strings.HasPrefix(got, "no metrics URL in the log:") || !strings.Contains(got, "queue bound") {
		t.Errorf("failures %q, want one that shows the log", got)
	}
}

func TestWaitForMetricsWaitsForTheLine(t *testing.T) {
	var requests atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprintf(w, "acked %d\n", requests.Add(1))
	}))
	defer srv.Close()
	WaitForMetrics(t, srv.URL, "the third answer", "acked 3\n")
	if n := requests.Load(); n != 3 {
		t.Errorf("%d requests, want 3 (it stops once the line is served)", n)
	}
}

func TestWaitForMetricsFailsWhenNothingAnswers(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	url := srv.URL
	srv.Close()
	r := &recordingTB{TB: t}
	r.inTest(func() {
		WaitForMetrics(r, url, "counters", "acked 1")
		t.Error("WaitForMetrics returned with nothing listening")
	})
	if got := r.end(); !strings.Contains(got, "connection refused") {
		t.Errorf("failures %q, want the request's error", got)
	}
}
