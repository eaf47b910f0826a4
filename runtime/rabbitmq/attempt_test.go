package rabbitmq

import (
	"context"
	"math"
	"strconv"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/streamgen/streamgen/internal/testsupport/testkit"
	"github.com/streamgen/streamgen/runtime"
	"github.com/streamgen/streamgen/runtime/adapter"
)

func death(queue, reason string, count any) amqp.Table {
	return amqp.Table{"queue": queue, "reason": reason, "count": count, "exchange": ""}
}

// The attempt of a delivery, as the runtime's one rule computes it from
// what the adapter reads off the AMQP delivery: the retry count header in
// any AMQP form (unreadable ones are poison) and the x-death cycles of the
// subscription's wait queues. Counts beyond the cap make the delivery the
// last attempt (max_attempts is 20 here).
func TestAttemptOfADelivery(t *testing.T) {
	testkit.NoLeaks(t)
	tests := []struct {
		name    string
		headers amqp.Table
		want    int
		wantErr bool
	}{
		{"first delivery", nil, 1, false},
		{"count header text", amqp.Table{runtime.RetryCountHeader: "3"}, 4, false},
		{"count header bytes", amqp.Table{runtime.RetryCountHeader: []byte("2")}, 3, false},
		{"count header int8", amqp.Table{runtime.RetryCountHeader: int8(1)}, 2, false},
		{"count header int16", amqp.Table{runtime.RetryCountHeader: int16(2)}, 3, false},
		{"count header int32", amqp.Table{runtime.RetryCountHeader: int32(4)}, 5, false},
		{"count header int64", amqp.Table{runtime.RetryCountHeader: int64(5)}, 6, false},
		{"count header uint8", amqp.Table{runtime.RetryCountHeader: uint8(6)}, 7, false},
		{"count header uint16", amqp.Table{runtime.RetryCountHeader: uint16(7)}, 8, false},
		{"count header uint32", amqp.Table{runtime.RetryCountHeader: uint32(8)}, 9, false},
		{"empty count header", amqp.Table{runtime.RetryCountHeader: ""}, 1, false},
		{"bad count header", amqp.Table{runtime.RetryCountHeader: "many"}, 1, true},
		{"negative count header", amqp.Table{runtime.RetryCountHeader: int32(-2)}, 1, true},
		{"count header of a float type", amqp.Table{runtime.RetryCountHeader: 2.5}, 1, true},
		{"count header of a table", amqp.Table{runtime.RetryCountHeader: amqp.Table{"n": 1}}, 1, true},
		{"count header text above the bound", amqp.Table{runtime.RetryCountHeader: "9223372036854775807"}, 20, false},
		{"count header int64 above the bound", amqp.Table{runtime.RetryCountHeader: int64(math.MaxInt64)}, 20, false},
		{"count header uint32 above the bound", amqp.Table{runtime.RetryCountHeader: uint32(math.MaxUint32)}, 20, false},
		{"forged x-death count", amqp.Table{"x-death": []any{death("jobs.retry.1s", "expired", int64(10))}}, 11, false},
		{"x-death counts summing above the bound", amqp.Table{"x-death": []any{
			death("jobs.retry.1s", "expired", int64(math.MaxInt64)), death("jobs.retry.1m", "expired", int64(math.MaxInt64)),
		}}, 20, false},
		{"x-death of our wait queue", amqp.Table{"x-death": []any{death("jobs.retry.1s", "expired", int64(2))}}, 3, false},
		{"x-death sums the ladder's wait queues", amqp.Table{"x-death": []any{
			death("jobs.retry.1s", "expired", int64(2)), death("jobs.retry.1m", "expired", int64(1)),
		}}, 4, false},
		{"x-death of another queue is ignored", amqp.Table{"x-death": []any{death("other.retry", "expired", int64(9))}}, 1, false},
		{"x-death with another reason is ignored", amqp.Table{"x-death": []any{death("jobs.retry.1s", "rejected", int64(9))}}, 1, false},
		{"max of header and x-death: header larger", amqp.Table{
			runtime.RetryCountHeader: "3",
			"x-death":                []any{death("jobs.retry.1s", "expired", int64(1))},
		}, 4, false},
		{"max of header and x-death: x-death larger", amqp.Table{
			runtime.RetryCountHeader: "1",
			"x-death":                []any{death("jobs.retry.1s", "expired", int64(4))},
		}, 5, false},
		{"malformed x-death is ignored", amqp.Table{"x-death": "garbage"}, 1, false},
		{"malformed x-death entry is ignored", amqp.Table{"x-death": []any{"garbage", death("jobs.retry.1s", "expired", "x")}}, 1, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got int
			sub := &runtime.Subscription{Name: "jobs", RetryDelays: []time.Duration{time.Second, time.Minute}, Handlers: []runtime.Handler{
				runtime.Handle("Job", runtime.Policy{MaxAttempts: 20, DeadLetter: "jobs.dead"}, func(_ context.Context, _ *struct{}, md runtime.Metadata) runtime.Outcome {
					got = md.Attempt
					return runtime.Ack()
				}),
			}}
			r := &runner{sub: sub}
			r.c = adapter.NewConsumer(sub, runtime.Env{}, adapter.Rules{Kind: runtime.RabbitMQ}, nopTransport{})
			v, _ := r.c.Handle(t.Context(), delivery(&amqp.Delivery{Type: "Job", Body: []byte(`{}`), Headers: tt.headers}, r.c))
			if tt.wantErr {
				if !v.Poison || got != 0 {
					t.Errorf("verdict %+v, handled at attempt %d: want poison", v, got)
				}
				return
			}
			if got != tt.want {
				t.Errorf("attempt = %d, want %d (verdict %+v)", got, tt.want, v)
			}
		})
	}
}

// nopTransport sends and settles nothing.
type nopTransport struct{}

func (nopTransport) Send(_ context.Context, _ *adapter.Delivery, _ *adapter.Copy, done func(error)) {
	done(nil)
}
func (nopTransport) Ack(context.Context, *adapter.Delivery) error     { return nil }
func (nopTransport) Reject(context.Context, *adapter.Delivery) error  { return nil }
func (nopTransport) Requeue(context.Context, *adapter.Delivery) error { return nil }
func (nopTransport) Release(context.Context, *adapter.Delivery) error { return nil }

// FuzzAttemptReader: whatever the retry count header and x-death hold, the
// delivery's attempt is 1..max_attempts or the message is poison, and
// nothing panics.
func FuzzAttemptReader(f *testing.F) {
	f.Add("3", int64(0), "jobs.retry", "expired", true)
	f.Add("abc", int64(2), "jobs.retry", "expired", false)
	f.Add("99999999999999999999", int64(-5), "other", "rejected", true)
	f.Add("", int64(1<<62), "jobs.retry", "expired", true)
	f.Fuzz(func(t *testing.T, count string, deaths int64, queue, reason string, asInt bool) {
		headers := amqp.Table{"x-death": []any{death(queue, reason, deaths), death("jobs.retry", "expired", deaths)}}
		if asInt {
			if n, err := strconv.ParseInt(count, 10, 64); err == nil {
				headers[runtime.RetryCountHeader] = n
			} else {
				headers[runtime.RetryCountHeader] = count
			}
		} else {
			headers[runtime.RetryCountHeader] = []byte(count)
		}
		var got int
		sub := &runtime.Subscription{Name: "jobs", Handlers: []runtime.Handler{
			runtime.Handle("Job", runtime.Policy{MaxAttempts: 4}, func(_ context.Context, _ *struct{}, md runtime.Metadata) runtime.Outcome {
				got = md.Attempt
				return runtime.Ack()
			}),
		}}
		c := adapter.NewConsumer(sub, runtime.Env{}, adapter.Rules{Kind: runtime.RabbitMQ}, nopTransport{})
		v, _ := c.Handle(t.Context(), delivery(&amqp.Delivery{Type: "Job", Body: []byte(`{}`), Headers: headers}, c))
		switch {
		case v.Poison && got == 0:
		case !v.Poison && got >= 1 && got <= 4:
		default:
			t.Fatalf("headers %v: attempt %d, verdict %+v", headers, got, v)
		}
	})
}
