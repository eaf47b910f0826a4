// Package parts has types a message of package decoders reaches.
package parts

import "github.com/streamgen/streamgen/testdata/json_decoders/parts/internal/deep"

// Part is an exported struct.
type Part struct {
	Name string    `json:"name"`
	Deep deep.Deep `json:"deep"`
}

// Msg has the name of decoders.Msg.
type Msg struct {
	ID int `json:"id"`
}

// Box holds a value of an unexported type.
type Box struct {
	Inner inner `json:"inner"`
	Size  int   `json:"size"`
}

type inner struct {
	X int `json:"x"`
}
