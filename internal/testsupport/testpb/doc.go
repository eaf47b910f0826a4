// Package testpb holds the protocol buffer messages of streamgen's codec
// tests and benchmarks. testpb.pb.go is generated from testpb.proto by
// make protos (protoc, from Debian's protobuf-compiler, with the
// protoc-gen-go of the google.golang.org/protobuf version go.mod
// requires), and committed, so that the tests need no protoc.
package testpb
