// Package fleet is streamgen's example of every codec: a fleet service
// that takes where its vehicles are in protobuf, their fuel levels in
// MessagePack and roadside alerts in CBOR, each message read by its
// content type, and notes the other message types its units send.
//
//   - Track takes a fleetpb.Position, a protocol buffer message: its
//     handler reads protobuf (application/protobuf), the default for such
//     a message, and JSON (the protobuf JSON mapping), which the tracking
//     service wrote before it moved to protobuf. PublishPosition writes
//     protobuf.
//   - Refuel (codec=msgpack) and Raise (codec=cbor) share fleet.units:
//     each reads its codec and JSON, and its publisher writes its codec.
//   - Note takes a runtime.Delivery: every other message type of
//     fleet.units, its body undecoded, with the retries and dead letters
//     of its annotation.
//
// A body that does not decode, or of a content type its handler does not
// read, is poison, parked on fleet.parked with the reason. fleet_test.go
// runs it on the in-process broker of runtime/streamtest, and
// rabbitmq_test.go on a RabbitMQ.
package fleet
