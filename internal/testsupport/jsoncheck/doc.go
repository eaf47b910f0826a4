// Package jsoncheck holds message types of every shape a generated JSON
// decoder meets, handlers that make streamgen write decoders for them
// (streamgen_gen.go), and the tests that hold those decoders to
// encoding/json: on any body, a decoder either yields what json.Unmarshal
// yields into a new value or leaves the body to json.Unmarshal.
package jsoncheck

//go:generate go run github.com/streamgen/streamgen/cmd/streamgen
