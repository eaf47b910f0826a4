package metricshttp

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/streamgen/streamgen/runtime"
)

// shutdownTimeout bounds how long stop waits for requests being answered.
const shutdownTimeout = 5 * time.Second

// Serve serves m at http://address/metrics until the returned stop is
// called; stop returns once the server has stopped. It logs the URL it
// serves at, and any error that stops the server early.
func Serve(address string, m *runtime.Metrics, logger *slog.Logger) (stop func(), err error) {
	ln, err := net.Listen("tcp", address)
	if err != nil {
		return nil, fmt.Errorf("metricshttp: serve metrics: %w", err)
	}
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", m)
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	served := make(chan struct{})
	go func() {
		defer close(served)
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			logger.Error("the metrics server stopped", "err", err)
		}
	}()
	logger.Info("metrics served", "url", "http://"+ln.Addr().String()+"/metrics")
	return func() {
		ctx, cancel := context.WithTimeout(context.Background(), shutdownTimeout)
		defer cancel()
		_ = srv.Shutdown(ctx)
		<-served
	}, nil
}
