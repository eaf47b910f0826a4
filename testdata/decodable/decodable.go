// Package decodable has message types that encoding/json decodes although
// they hold things it cannot decode into: skipped, unexported, or behind
// a type that decodes itself.
package decodable

import (
	"context"
	"encoding/json"
	"math/big"
	"time"
)

// Level decodes itself from text.
type Level int

// UnmarshalText reads a level name.
func (l *Level) UnmarshalText(b []byte) error { *l = Level(len(b)); return nil }

// Raw decodes itself from JSON.
type Raw struct {
	done chan struct{}
	Fn   func()
}

// UnmarshalJSON keeps nothing.
func (r *Raw) UnmarshalJSON([]byte) error { return nil }

// base is embedded: its exported fields are promoted.
type base struct {
	Created time.Time
}

// Tree is recursive.
type Tree struct {
	Kids []*Tree
}

// Rich has every kind of field json decodes.
type Rich struct {
	base
	Skip    chan int `json:"-"`
	hidden  func()
	Amount  *big.Int          `json:"amount"`
	Level   Level             `json:"level"`
	ByLevel map[Level]string  `json:"by_level"`
	ByID    map[int64][]Tree  `json:"by_id"`
	Raw     Raw               `json:"raw"`
	Extra   json.RawMessage   `json:"extra"`
	Any     any               `json:"any"`
	Fixed   [4]uint8          `json:"fixed"`
	Named   map[string]*Level `json:"named"`
	Dashed  string            `json:"-,"`
}

// Custom embeds a type that decodes itself, and so decodes itself too.
type Custom struct{ Raw }

//stream:subscriber "rich"
func Take(ctx context.Context, r Rich) error { _ = r.hidden; return nil }

//stream:subscriber "custom"
func TakeCustom(ctx context.Context, c *Custom) error { return nil }

//stream:subscriber "levels"
func TakeLevel(ctx context.Context, l Level) error { return nil }
