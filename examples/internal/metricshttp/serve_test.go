package metricshttp_test

import (
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"testing"

	"github.com/streamgen/streamgen/examples/internal/metricshttp"
	"github.com/streamgen/streamgen/runtime"
	"github.com/streamgen/streamgen/runtime/streamtest"
)

// get returns the status and body of a request to url, on a connection of
// its own.
func get(t *testing.T, method, url string) (int, string, error) {
	t.Helper()
	req, err := http.NewRequest(method, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	resp, err := client.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(body), nil
}

func TestServeAnswersWithTheCountersUntilStopped(t *testing.T) {
	m := runtime.NewMetrics()
	m.Subscription(runtime.ZeroMQ, "jobs").Acked.Add(3)
	logs := streamtest.NewLogRecorder(nil)
	stop, err := metricshttp.Serve("127.0.0.1:0", m, logs.Logger())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop) // for a test that fails early; a second stop does nothing
	served := logs.Find(slog.LevelInfo, "metrics served")
	if len(served) != 1 || !strings.HasPrefix(served[0].Attr("url"), "http://127.0.0.1:") || strings.HasSuffix(served[0].Attr("url"), ":0/metrics") {
		t.Fatalf("want one line with the URL and the port the server got; logs:\n%s", logs)
	}
	url := served[0].Attr("url")

	status, body, err := get(t, http.MethodGet, url)
	if err != nil || status != http.StatusOK {
		t.Fatalf("GET %s = %d, %v", url, status, err)
	}
	if want := `streamgen_settled_total{broker="zeromq",subscription="jobs",outcome="acked"} 3`; !strings.Contains(body, want) {
		t.Errorf("GET %s answered\n%s\nwithout %s", url, body, want)
	}
	if status, _, err := get(t, http.MethodPost, url); err != nil || status != http.StatusMethodNotAllowed {
		t.Errorf("POST %s = %d, %v; want 405", url, status, err)
	}
	other := strings.TrimSuffix(url, "metrics") + "other"
	if status, _, err := get(t, http.MethodGet, other); err != nil || status != http.StatusNotFound {
		t.Errorf("GET %s = %d, %v; want 404", other, status, err)
	}

	stop()
	if _, _, err := get(t, http.MethodGet, url); err == nil {
		t.Errorf("GET %s answered after stop", url)
	}
	// TestMain's leak check fails the package if the server's goroutine
	// outlived stop.
}

func TestServeOnAnAddressInUseFails(t *testing.T) {
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	logs := streamtest.NewLogRecorder(nil)
	stop, err := metricshttp.Serve(taken.Addr().String(), runtime.NewMetrics(), logs.Logger())
	if err == nil {
		stop()
		t.Fatalf("Serve on %s, an address in use, succeeded", taken.Addr())
	}
	var opErr *net.OpError
	if !errors.As(err, &opErr) || !strings.HasPrefix(err.Error(), "metricshttp: ") {
		t.Errorf("Serve = %v, want the listen error wrapped with the package's name", err)
	}
	if got := logs.Records(); len(got) != 0 {
		t.Errorf("a server that did not start logged %v", got)
	}
}
