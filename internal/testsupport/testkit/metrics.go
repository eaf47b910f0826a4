package testkit

import (
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"
)

// metricsServedLine is the text-handler log line in which a service says
// where it serves its counters.
var metricsServedLine = regexp.MustCompile(`msg="metrics served" url=(\S+)`)

// MetricsURL returns the URL of the "metrics served" line of log, written
// by slog's text handler, failing t when there is none.
func MetricsURL(t testing.TB, log string) string {
	t.Helper()
	m := metricsServedLine.FindStringSubmatch(log)
	if m == nil {
		t.Fatalf("no metrics URL in the log:\n%s", log)
	}
	return m[1]
}

// WaitForMetrics fetches url until what it serves contains line, failing t
// after Patience or when a request fails; what names the wait.
func WaitForMetrics(t testing.TB, url, what, line string) {
	t.Helper()
	client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	Eventually(t, what, func() bool {
		resp, err := client.Get(url)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		return strings.Contains(string(body), line)
	})
}
