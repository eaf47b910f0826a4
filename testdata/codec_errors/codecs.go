// Package codecs asks for codecs its message types cannot use.
package codecs

import (
	"context"

	"github.com/streamgen/streamgen/internal/testsupport/testpb"
	"github.com/streamgen/streamgen/runtime"
)

// Reading is a struct, not a protocol buffer message.
type Reading struct {
	Meter string `json:"meter"`
}

//stream:subscriber "readings" broker=rabbitmq codec=protobuf
func Record(ctx context.Context, r Reading) error { return nil }

//stream:subscriber "orders" codec=msgpack
func Place(ctx context.Context, o *testpb.Order) error { return nil }

//stream:subscriber "orders.cbor" codec=cbor
func PlaceCBOR(ctx context.Context, o *testpb.Order) error { return nil }

//stream:subscriber "orders.value"
func PlaceByValue(ctx context.Context, o testpb.Order) error { return nil }

//stream:subscriber "readings.avro" codec=avro
func RecordAvro(ctx context.Context, r Reading) error { return nil }

//stream:subscriber "audit" type=Everything codec=json
func Audit(ctx context.Context, m runtime.Delivery) error { return nil }

//stream:subscriber "audit"
func AuditAgain(ctx context.Context, m *runtime.Delivery) error { return nil }

//stream:subscriber "audit.batches" batch_size=10
func AuditBatches(ctx context.Context, ms []runtime.Delivery) error { return nil }

// Summary is not a protocol buffer message.
//
//stream:publisher queue=summaries codec=protobuf
type Summary struct{ Count int }

// Total names a codec that does not exist.
//
//stream:publisher queue=totals codec=yaml
type Total struct{ Count int }
