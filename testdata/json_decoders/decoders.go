// Package decoders declares, at package scope, the names a generated JSON
// decoder would give its locals and functions, and message types whose
// fields reach types of other packages it may or may not name: the
// decoders pick other names, and leave what they cannot name to
// encoding/json.
package decoders

import (
	"context"

	"github.com/streamgen/streamgen/testdata/json_decoders/parts"
)

// These are named like the decoders' locals and the package they call.
var (
	d, v, x, i, seen, body = 1, 2, 3, 4, 5, 6
	jsondecode             = "not the package"
)

// s is a type named like a decoder's slice local.
type s struct{ N int }

// streamgen_json_Msg is named like the decoder of Msg.
func streamgen_json_Msg() {}

// Msg has the same name as parts.Msg.
type Msg struct {
	Items []s          `json:"items"`
	Ptrs  []*s         `json:"ptrs"`
	Part  parts.Part   `json:"part"`
	Other *parts.Msg   `json:"other"`
	Box   parts.Box    `json:"box"`
	Parts []parts.Part `json:"parts"`
}

//stream:subscriber "msgs" broker=zeromq
func Take(ctx context.Context, m Msg) error { return nil }

//stream:subscriber "parts" broker=zeromq
func TakePart(ctx context.Context, p *parts.Msg) error { return nil }

var _, _, _, _, _, _, _ = d, v, x, i, seen, body, jsondecode
