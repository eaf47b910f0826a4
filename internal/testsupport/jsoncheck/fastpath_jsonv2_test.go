//go:build goexperiment.jsonv2

package jsoncheck

// fastPath is whether the generated decoders decode anything themselves:
// under GOEXPERIMENT=jsonv2 they leave every body to encoding/json.
const fastPath = false
