//go:build !goexperiment.jsonv2

package jsoncheck

// fastPath is whether the generated decoders decode anything themselves:
// under encoding/json's own rules (v1) they do.
const fastPath = true
