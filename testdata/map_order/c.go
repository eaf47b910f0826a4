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

//stream:subscriber "sub.01" broker=zeromq type=sub.01.w0 max_attempts=2 out_retry=self concurrency=3 max_payload_bytes=16KiB
func H02(ctx context.Context, m alpha.Msg5) error { return nil }

//stream:subscriber "sub.02" broker=rabbitmq type=sub.02.w1 max_attempts=3 dead_letter=sub.02.dead1
func H05(ctx context.Context, m alpha.Msg4) runtime.Outcome { return runtime.Ack() }

//stream:subscriber "sub.03" broker=zeromq type=sub.03.w1 max_attempts=3 out_retry=self
func H08(ctx context.Context, m T6, md runtime.Metadata) error { return nil }

//stream:subscriber "sub.04" broker=rabbitmq type=sub.04.w0 max_attempts=2 dead_letter=sub.04.dead0 retry_delay=1s,5s,30s prefetch=7
func H11(ctx context.Context, m beta.Msg3) error { return nil }

//stream:subscriber "sub.06" broker=rabbitmq type=sub.06.w0 max_attempts=2 dead_letter=sub.06.dead0 retry_delay=1s,5s,30s prefetch=7
func H14(ctx context.Context, m beta.Msg5) error { return nil }

//stream:subscriber "sub.07" broker=zeromq type=sub.07.w0 max_attempts=2 out_retry=self concurrency=3 max_payload_bytes=16KiB
func H17(ctx context.Context, m alpha.Msg0) error { return nil }

//stream:subscriber "sub.07" broker=zeromq type=sub.07.w3 max_attempts=5 out_retry=self
func H20(ctx context.Context, m alpha.Msg3, md runtime.Metadata) runtime.Outcome {
	return runtime.Ack()
}

//stream:subscriber "sub.09" broker=zeromq type=sub.09.w1 max_attempts=3 out_retry=self
func H23(ctx context.Context, m alpha.Msg4) error { return nil }

//stream:subscriber "sub.10" broker=rabbitmq type=sub.10.w2 max_attempts=4 dead_letter=sub.10.dead2
func H26(ctx context.Context, m beta.Msg5) error { return nil }

//stream:subscriber "sub.11" broker=zeromq type=sub.11.w2 max_attempts=4 out_retry=self
func H29(ctx context.Context, m beta.Msg0) error { return nil }

//stream:subscriber "sub.13" broker=zeromq type=sub.13.w0 max_attempts=2 out_retry=self concurrency=3 max_payload_bytes=16KiB
func H32(ctx context.Context, m alpha.Msg5, md runtime.Metadata) error { return nil }
