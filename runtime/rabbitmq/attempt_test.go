package rabbitmq

import (
	"math"
	"testing"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/streamgen/streamgen/runtime"
)

func death(queue, reason string, count any) amqp.Table {
	return amqp.Table{"queue": queue, "reason": reason, "count": count, "exchange": ""}
}

func TestAttemptOf(t *testing.T) {
	noLeaks(t)
	wait := map[string]bool{"jobs.retry": true, "jobs.retry.1m": true}
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
		// Counts above runtime.MaxRetryCount read as it: the attempts are used
		// up, and 1 + count cannot overflow into a fresh retry budget.
		{"count header text above the bound", amqp.Table{runtime.RetryCountHeader: "9223372036854775807"}, runtime.MaxRetryCount + 1, false},
		{"count header int64 above the bound", amqp.Table{runtime.RetryCountHeader: int64(math.MaxInt64)}, runtime.MaxRetryCount + 1, false},
		{"count header uint32 above the bound", amqp.Table{runtime.RetryCountHeader: uint32(math.MaxUint32)}, runtime.MaxRetryCount + 1, false},
		{"x-death counts summing above the bound", amqp.Table{"x-death": []any{
			death("jobs.retry", "expired", int64(math.MaxInt64)), death("jobs.retry.1m", "expired", int64(math.MaxInt64)),
		}}, runtime.MaxRetryCount + 1, false},
		{"x-death of our wait queue", amqp.Table{"x-death": []any{death("jobs.retry", "expired", int64(2))}}, 3, false},
		{"x-death sums the ladder's wait queues", amqp.Table{"x-death": []any{
			death("jobs.retry", "expired", int64(2)), death("jobs.retry.1m", "expired", int64(1)),
		}}, 4, false},
		{"x-death of another queue is ignored", amqp.Table{"x-death": []any{death("other.retry", "expired", int64(9))}}, 1, false},
		{"x-death with another reason is ignored", amqp.Table{"x-death": []any{death("jobs.retry", "rejected", int64(9))}}, 1, false},
		{"max of header and x-death: header larger", amqp.Table{
			runtime.RetryCountHeader: "3",
			"x-death":                []any{death("jobs.retry", "expired", int64(1))},
		}, 4, false},
		{"max of header and x-death: x-death larger", amqp.Table{
			runtime.RetryCountHeader: "1",
			"x-death":                []any{death("jobs.retry", "expired", int64(4))},
		}, 5, false},
		{"malformed x-death is ignored", amqp.Table{"x-death": "garbage"}, 1, false},
		{"malformed x-death entry is ignored", amqp.Table{"x-death": []any{"garbage", death("jobs.retry", "expired", "x")}}, 1, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := attemptOf(tt.headers, wait)
			if got != tt.want {
				t.Errorf("attempt = %d, want %d", got, tt.want)
			}
			if (err != nil) != tt.wantErr {
				t.Errorf("err = %v, want error %v", err, tt.wantErr)
			}
		})
	}
}
