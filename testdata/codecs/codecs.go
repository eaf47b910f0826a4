// Package codecs reads and writes its messages in every codec streamgen
// ships: a protocol buffer message in protobuf, structs in MessagePack and
// CBOR by codec=, and JSON; its audit takes every message type. One
// handler answers requests in protobuf.
package codecs

import (
	"context"

	"github.com/streamgen/streamgen/internal/testsupport/testpb"
	"github.com/streamgen/streamgen/runtime"
)

// Reading is a meter reading, sent in MessagePack.
type Reading struct {
	Meter string  `json:"meter"`
	Value float64 `json:"value"`
}

// Alarm is sent in CBOR.
type Alarm struct {
	Meter string `json:"meter"`
}

// Note is sent in JSON, whatever codec the broker has.
type Note struct {
	Text string `json:"text"`
}

// Summary is a publisher's message in CBOR.
//
//stream:publisher queue=orders codec=cbor
type Summary struct {
	Count int `json:"count"`
}

// Place takes an order in protobuf, and in its JSON mapping while producers
// move to protobuf.
//
//stream:subscriber "orders" broker=rabbitmq max_attempts=3 dead_letter=orders.dead
func Place(ctx context.Context, o *testpb.Order) error { return nil }

// Record takes readings in MessagePack.
//
//stream:subscriber "readings" codec=msgpack
func Record(ctx context.Context, r Reading, md runtime.Metadata) error { return nil }

// Raise takes alarms in CBOR.
//
//stream:subscriber "readings" codec=cbor
func Raise(ctx context.Context, a *Alarm) error { return nil }

// Jot takes notes in JSON.
//
//stream:subscriber "notes" codec=json
func Jot(ctx context.Context, n Note) error { return nil }

// Mirror takes orders in the protobuf JSON mapping, and writes them so.
//
//stream:subscriber "orders.json" codec=json
func Mirror(ctx context.Context, o *testpb.Order) error { return nil }

// Audit takes every other message type of the orders queue, undecoded.
//
//stream:subscriber "orders" max_attempts=2
func Audit(ctx context.Context, m runtime.Delivery) error { return nil }

// Store keeps readings in batches, in CBOR.
//
//stream:subscriber "readings.batches" codec=cbor batch_size=10
func Store(ctx context.Context, rs []*Reading) error { return nil }

// FirstLine answers an order in protobuf with its first line, a protocol
// buffer message too; its typed client sends the order in protobuf.
//
//stream:subscriber "orders.lines" broker=rabbitmq
func FirstLine(ctx context.Context, o *testpb.Order) (*testpb.OrderItem, error) {
	return o.GetItems()[0], nil
}
