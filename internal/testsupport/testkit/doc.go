// Package testkit holds what the repository's tests share, so that each
// helper is written once and each test shows only what it checks:
//
//   - Eventually, to wait for a condition with a generous deadline
//     (Patience) instead of sleeping a fixed time;
//   - NoLeaks, which fails a test that leaves a goroutine running (the
//     packages check the whole run with goleak.VerifyTestMain too);
//   - SyncBuffer, to read what a service logs or a demo tells while it is
//     still writing;
//   - CountingHandler, to check that logging below the level costs a
//     message handler nothing; records themselves are kept by
//     streamtest.LogRecorder, the recorder every test uses;
//   - Start, to run a command's run function in the background and check
//     that it stops gracefully, and RestoreDefaultLogger, for commands that
//     call slog.SetDefault;
//   - MetricsURL and WaitForMetrics, to read the counters a service serves;
//   - Tmpfs and Fill, for a small file system to fill (Linux, root);
//   - DialRabbitMQ and RequireRabbitMQ, which fail a test loudly, with the
//     command that starts a broker, when RabbitMQ does not answer: broker
//     tests are never skipped.
//
// A test of a service command reads like this:
//
//	var logs testkit.SyncBuffer
//	svc := testkit.Start(t, func(ctx context.Context) error {
//		return run(ctx, []string{"-metrics", "127.0.0.1:0"}, &logs)
//	})
//	... publish, then
//	testkit.WaitForMetrics(t, testkit.MetricsURL(t, logs.String()), "the acked job", `outcome="acked",subscription="jobs"} 1`)
//	svc.Stop()
//
// The package is internal: it is not part of streamgen's API.
package testkit
