// Package maporder has many subscriptions, message types and imports, so
// that any output depending on map iteration order would show.
package maporder

import (
	"context"

	"github.com/streamgen/streamgen/runtime"
	"github.com/streamgen/streamgen/testdata/map_order/alpha"
	"github.com/streamgen/streamgen/testdata/map_order/beta"
)

var (
	_ = runtime.Ack
	_ alpha.Msg0
	_ beta.Msg0
)

// The local message types.
type (
	T0 struct{ N int }
	T1 struct{ N int }
	T2 struct{ N int }
	T3 struct{ N int }
	T4 struct{ N int }
	T5 struct{ N int }
	T6 struct{ N int }
	T7 struct{ N int }
	T8 struct{ N int }
	T9 struct{ N int }
)

//stream:subscriber "sub.01" broker=zeromq type=sub.01.w1 max_attempts=3 out_retry=self
func H03(ctx context.Context, m *T1) error { return nil }

//stream:subscriber "sub.02" broker=rabbitmq type=sub.02.w2 max_attempts=4 dead_letter=sub.02.dead2
func H06(ctx context.Context, m *T8) error { return nil }

//stream:subscriber "sub.03" broker=zeromq type=sub.03.w2 max_attempts=4 out_retry=self
func H09(ctx context.Context, m *alpha.Msg0) error { return nil }

//stream:subscriber "sub.05" broker=zeromq type=sub.05.w0 max_attempts=2 out_retry=self concurrency=3 max_payload_bytes=16KiB
func H12(ctx context.Context, m *T9, md runtime.Metadata) error { return nil }

//stream:subscriber "sub.06" broker=rabbitmq type=sub.06.w1 max_attempts=3 dead_letter=sub.06.dead1
func H15(ctx context.Context, m *beta.Msg0) runtime.Outcome { return runtime.Ack() }

//stream:subscriber "sub.07" broker=zeromq type=sub.07.w1 max_attempts=3 out_retry=self
func H18(ctx context.Context, m *T0) error { return nil }

//stream:subscriber "sub.08" broker=rabbitmq type=sub.08.w0 max_attempts=2 dead_letter=sub.08.dead0 retry_delay=1s,5s,30s prefetch=7
func H21(ctx context.Context, m *T8) error { return nil }

//stream:subscriber "sub.10" broker=rabbitmq type=sub.10.w0 max_attempts=2 dead_letter=sub.10.dead0 retry_delay=1s,5s,30s prefetch=7
func H24(ctx context.Context, m *beta.Msg1, md runtime.Metadata) error { return nil }

//stream:subscriber "sub.11" broker=zeromq type=sub.11.w0 max_attempts=2 out_retry=self concurrency=3 max_payload_bytes=16KiB
func H27(ctx context.Context, m *T5) error { return nil }

//stream:subscriber "sub.11" broker=zeromq type=sub.11.w3 max_attempts=5 out_retry=self
func H30(ctx context.Context, m *beta.Msg0) runtime.Outcome { return runtime.Ack() }

//stream:subscriber "sub.13" broker=zeromq type=sub.13.w1 max_attempts=3 out_retry=self
func H33(ctx context.Context, m *beta.Msg3) error { return nil }
