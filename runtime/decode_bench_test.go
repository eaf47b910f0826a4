package runtime_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/streamgen/streamgen/internal/testsupport/benchpair"
	"github.com/streamgen/streamgen/internal/testsupport/benchpair/benchorder"
	"github.com/streamgen/streamgen/runtime"
)

// BenchmarkDecode measures the typed decode of a handler as generated code
// makes it, with runtime.HandleJSON and the decoder streamgen generates
// for the message type (what Consumer.Process calls: a new T, the
// generated decoder, the value handed on as an any), against
// json.Unmarshal into the same type, in interleaved rounds
// (internal/testsupport/benchpair). The ratio is json.Unmarshal's time over the typed
// decode's: above 1.0 means faster.
func BenchmarkDecode(b *testing.B) {
	for _, size := range []int{benchpair.Small, benchpair.Large} {
		b.Run("payload="+benchpair.SizeName(size), func(b *testing.B) {
			body := benchpair.OrderJSON(size)
			h := runtime.HandleJSON("Order", runtime.Policy{}, benchorder.Decode, func(context.Context, *benchpair.Order, runtime.Metadata) runtime.Outcome { return runtime.Ack() })
			codec := runtime.Codec(runtime.JSON{})
			n := 2000
			if size > benchpair.Small {
				n = 100
			}
			var sink *benchpair.Order
			benchpair.Run(b, benchpair.Pair{
				Units: n, Unit: "op", Warmup: 1,
				Streamgen: func(b *testing.B) time.Duration {
					start := time.Now()
					for range n {
						v, err := h.Decode(codec, body)
						if err != nil {
							b.Fatal(err)
						}
						sink = v.(*benchpair.Order)
					}
					return time.Since(start)
				},
				Baseline: func(b *testing.B) time.Duration {
					start := time.Now()
					for range n {
						v := new(benchpair.Order)
						if err := json.Unmarshal(body, v); err != nil {
							b.Fatal(err)
						}
						sink = v
					}
					return time.Since(start)
				},
			})
			if sink == nil || sink.ID == 0 {
				b.Fatal("nothing was decoded")
			}
		})
	}
}
