//go:build goexperiment.jsonv2

package jsondecode

// fastPath is whether the Decoder decodes at all. Under
// GOEXPERIMENT=jsonv2 encoding/json follows other rules (field names,
// case-insensitive matching, duplicate keys, invalid UTF-8, ...), which
// the Decoder does not: it fails at Start, and every body is left to
// encoding/json.
const fastPath = false
