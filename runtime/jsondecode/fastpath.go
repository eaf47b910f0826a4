//go:build !goexperiment.jsonv2

package jsondecode

// fastPath is whether the Decoder decodes at all. It does under
// encoding/json's own rules (v1), the ones it follows.
const fastPath = true
