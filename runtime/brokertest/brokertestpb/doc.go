// Package brokertestpb holds the protocol buffer message of the conformance
// suite (package brokertest): its Job, which the codec cases carry in
// protobuf. brokertestpb.pb.go is generated from brokertestpb.proto by
// make protos, and committed.
package brokertestpb
