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

//stream:subscriber "sub.00" broker=rabbitmq type=sub.00.w0 max_attempts=2 dead_letter=sub.00.dead0 retry_delay=1s,5s,30s prefetch=7
func H01(ctx context.Context, m alpha.Msg1) error { return nil }

//stream:subscriber "sub.02" broker=rabbitmq type=sub.02.w0 max_attempts=2 dead_letter=sub.02.dead0 retry_delay=1s,5s,30s prefetch=7
func H04(ctx context.Context, m beta.Msg0, md runtime.Metadata) error { return nil }

//stream:subscriber "sub.03" broker=zeromq type=sub.03.w0 max_attempts=2 out_retry=self concurrency=3 max_payload_bytes=16KiB
func H07(ctx context.Context, m T0) error { return nil }

//stream:subscriber "sub.03" broker=zeromq type=sub.03.w3 max_attempts=5 out_retry=self
func H10(ctx context.Context, m T1) runtime.Outcome { return runtime.Ack() }

//stream:subscriber "sub.05" broker=zeromq type=sub.05.w1 max_attempts=3 out_retry=self
func H13(ctx context.Context, m T3) error { return nil }

//stream:subscriber "sub.06" broker=rabbitmq type=sub.06.w2 max_attempts=4 dead_letter=sub.06.dead2
func H16(ctx context.Context, m beta.Msg4, md runtime.Metadata) error { return nil }

//stream:subscriber "sub.07" broker=zeromq type=sub.07.w2 max_attempts=4 out_retry=self
func H19(ctx context.Context, m beta.Msg1) error { return nil }

//stream:subscriber "sub.09" broker=zeromq type=sub.09.w0 max_attempts=2 out_retry=self concurrency=3 max_payload_bytes=16KiB
func H22(ctx context.Context, m T9) error { return nil }

//stream:subscriber "sub.10" broker=rabbitmq type=sub.10.w1 max_attempts=3 dead_letter=sub.10.dead1
func H25(ctx context.Context, m T9) runtime.Outcome { return runtime.Ack() }

//stream:subscriber "sub.11" broker=zeromq type=sub.11.w1 max_attempts=3 out_retry=self
func H28(ctx context.Context, m T8, md runtime.Metadata) error { return nil }

//stream:subscriber "sub.12" broker=rabbitmq type=sub.12.w0 max_attempts=2 dead_letter=sub.12.dead0 retry_delay=1s,5s,30s prefetch=7
func H31(ctx context.Context, m beta.Msg1) error { return nil }
