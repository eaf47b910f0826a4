// Package exampletest holds what the tests of the example commands (and of
// package demo) share, so that each test shows only what it checks:
//
//   - SyncBuffer, to read what a service logs or a demo tells while it is
//     still writing;
//   - Eventually, to wait for a condition with a generous deadline instead
//     of sleeping a fixed time;
//   - Start, to run a command's run function in the background and check
//     that it stops gracefully;
//   - RestoreDefaultLogger, for commands that call slog.SetDefault;
//   - CountingHandler, to check that logging below the level costs a
//     message handler nothing;
//   - MetricsURL and WaitForMetrics, to read the counters a service serves;
//   - DialRabbitMQ and RequireRabbitMQ, which fail a test loudly, with the
//     command that starts a broker, when RabbitMQ does not answer: broker
//     tests are never skipped.
//
// A test of a service command reads like this:
//
//	var logs exampletest.SyncBuffer
//	svc := exampletest.Start(t, func(ctx context.Context) error {
//		return run(ctx, []string{"-metrics", "127.0.0.1:0"}, &logs)
//	})
//	... publish, then
//	exampletest.WaitForMetrics(t, exampletest.MetricsURL(t, logs.String()), "the acked job", `outcome="acked"} 1`)
//	svc.Stop()
//
// The package is internal to the examples: it is not part of streamgen's
// API.
package exampletest
