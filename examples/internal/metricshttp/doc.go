// Package metricshttp serves an App's counters over HTTP for the example
// services: GET /metrics answers with runtime.Metrics in the Prometheus
// text format.
//
// A service main wires it after building its App, when a flag asks for it:
//
//	if cfg.metrics != "" {
//		stopMetrics, err := metricshttp.Serve(cfg.metrics, app.Metrics(), logger)
//		if err != nil {
//			return err
//		}
//		defer stopMetrics()
//	}
//	return app.Run(ctx)
//
// Serve logs the address it listens on ("metrics served", with the url),
// so an address with port 0 shows which port it got.
//
// The package is internal to the examples: it is not part of streamgen's
// API. A service of your own mounts app.Metrics() (an http.Handler) on the
// mux it already has.
package metricshttp
