// Package fleetpb holds the protocol buffer messages of the fleet example.
// fleet.pb.go is generated from fleet.proto by make protos and committed.
package fleetpb
