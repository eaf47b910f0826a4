// Package demo holds what the example programs share to show a person what
// a streamgen service does while it runs:
//
//   - Narrator, a slog.Handler that renders the runtime's own log records
//     (and the handlers') as one readable line each: when it happened, the
//     subscription, the message, the attempt out of the maximum, and what
//     happened (a retry with its delay, a drop or a park with its reason).
//     It tells a copy's delivery after the record that sent the copy.
//   - ScaledClock, a clock.Clock that runs N times faster than the wall
//     clock, so a demo can honestly say "retry in 30s" and be done in a
//     second.
//   - WriteSummary, the per-subscription table of an App's counters.
//   - Check and WaitFor, which turn the counters into a smoke test:
//     a demo waits until the numbers it expects are reached, and fails when
//     they are not.
//   - Start, which runs the demo's App in the background until Stop, and
//     Play, which tells each Step, sends its messages and waits for its
//     counters and for the narrator to have told them.
//   - Peek, Purge and Delete, to start a RabbitMQ demo (on the
//     broker internal/brokerurl names) from empty queues and show what sits in a dead-letter queue, headers
//     and all, without taking it away.
//
// A demo wires them like this:
//
//	clock := demo.NewScaledClock(100)
//	narrator := demo.NewNarrator(os.Stdout, clock.Now).WithDeadLetterQueues("invoices.dead")
//	logger := slog.New(narrator)
//	app := runtime.NewApp("billing", runtime.WithLogger(logger), runtime.WithClock(clock))
//	billing.Mount(app, zq)
//	svc, err := demo.Start(ctx, app)
//	... (on error: interrupted when ctx has ended, else the service did not start)
//	defer svc.Stop()
//	err = demo.Play(ctx, narrator, zq, app.Stats, steps, 8*time.Second)
//	err = svc.Stop()
//	demo.WriteSummary(os.Stdout, app.Stats())
//
// The package is internal to the examples: it is not part of streamgen's
// API.
package demo
