package promstream_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/streamgen/streamgen/runtime"
	"github.com/streamgen/streamgen/runtime/promstream"
	"github.com/streamgen/streamgen/runtime/streamtest"
)

// A service gives the App a Collector as its Observer, registers it with
// its registry, and serves the registry at /metrics.
func Example() {
	metrics := promstream.New()
	reg := prometheus.NewRegistry()
	reg.MustRegister(metrics)

	clock := streamtest.NewClock(streamtest.DefaultStart())
	broker := streamtest.NewBroker(runtime.ZeroMQ, clock)
	app := runtime.NewApp("billing", runtime.WithClock(clock), runtime.WithObserver(metrics))
	app.Mount(broker, &runtime.Subscription{Name: "jobs", Broker: runtime.ZeroMQ, Handlers: []runtime.Handler{
		runtime.Handle("Job", runtime.Policy{}, func(context.Context, *struct{}, runtime.Metadata) runtime.Outcome { return runtime.Ack() }),
	}})
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- app.Run(ctx) }()
	defer func() { stop(); <-done }()
	<-app.Ready()

	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	srv := httptest.NewServer(mux)
	defer srv.Close()

	_ = runtime.Publish(ctx, broker, runtime.Queue("jobs"), "Job", struct{}{})
	_ = broker.Wait(ctx)
	resp, err := http.Get(srv.URL + "/metrics")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	for line := range strings.Lines(string(body)) {
		if strings.HasPrefix(line, "streamgen_settled_total") && strings.Contains(line, `outcome="acked"`) ||
			strings.HasPrefix(line, "streamgen_deliveries_total") {
			fmt.Print(line)
		}
	}
	// Output:
	// streamgen_deliveries_total{broker="zeromq",subscription="jobs"} 1
	// streamgen_settled_total{broker="zeromq",message_type="Job",outcome="acked",subscription="jobs"} 1
}
