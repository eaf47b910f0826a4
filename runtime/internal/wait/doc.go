// Package wait holds the waits the broker adapters share, each bounded by a
// context:
//
//	// back off before reconnecting, on the App's clock
//	if err := wait.Sleep(ctx, env.Clock, delay); err != nil {
//		return err // ctx ended first
//	}
//
//	// let in-flight handlers finish while the shutdown deadline allows
//	if err := wait.Group(ctx, &workers); err != nil {
//		return fmt.Errorf("handlers did not finish: %w", err)
//	}
//
// Sleep waits on a clock.Clock, so tests that pass a fake clock decide
// when the time has passed.
package wait
