// Package jsonschema holds Go types whose JSON Schema the generator's tests
// derive, and whose values they encode with encoding/json and check against
// that schema.
package jsonschema

import (
	"encoding/json"
	"errors"
	"time"
)

// Basics has a field of every basic kind.
type Basics struct {
	I   int
	I8  int8
	I16 int16
	I32 int32
	I64 int64
	U   uint
	U8  uint8
	U16 uint16
	U32 uint32
	U64 uint64
	UP  uintptr
	F32 float32
	F64 float64
	B   bool
	S   string
}

// Tags uses the options of json tags.
type Tags struct {
	Renamed   string  `json:"renamed"`
	Omitted   string  `json:"omitted,omitempty"`
	Skipped   string  `json:"-"`
	Dash      string  `json:"-,"`
	Count     int     `json:"count,string"`
	Unsigned  uint16  `json:"unsigned,string"`
	Flag      bool    `json:"flag,string"`
	Ratio     float64 `json:"ratio,string"`
	Quoted    string  `json:"quoted,string"`
	MaybeInt  *int    `json:"maybe_int,string"`
	Zero      Inner   `json:"zero,omitzero"`
	Struct    Inner   `json:"struct,omitempty"`
	FullArr   [2]int  `json:"full_arr,omitempty"`
	Text      Level   `json:"text,string"`
	Bad       string  `json:"bad\\name"`
	Opts      string  `json:",omitempty"`
	unexposed int
}

// Inner is a small struct.
type Inner struct {
	N int `json:"n"`
}

// Level is written as text.
type Level int

// MarshalText writes the level's name.
func (l Level) MarshalText() ([]byte, error) {
	if l == 0 {
		return []byte("low"), nil
	}
	return []byte("high"), nil
}

// UnmarshalText reads a level's name.
func (l *Level) UnmarshalText(b []byte) error {
	switch string(b) {
	case "low":
		*l = 0
	case "high":
		*l = 1
	default:
		return errors.New("bad level")
	}
	return nil
}

// Custom writes itself, through a pointer receiver.
type Custom struct{ v int }

// MarshalJSON writes an array.
func (c *Custom) MarshalJSON() ([]byte, error) { return []byte(`[1,"two"]`), nil }

// Label is a named string, embedded below.
type Label string

type hidden struct {
	Promoted string `json:"promoted"`
}

// Base is embedded by value.
type Base struct {
	ID    string `json:"id"`
	Clash string `json:"clash"`
	Deep  string `json:"deep"`
	Plain string
}

// Extra is embedded through a pointer.
type Extra struct {
	Note  string `json:"note"`
	Clash string `json:"clash"`
	Plain string `json:"Plain"`
}

// Embeds promotes the fields of embedded structs as encoding/json does.
type Embeds struct {
	Base
	*Extra
	hidden
	Label
	Deep string `json:"deep"`
}

// Collections has slices, arrays and maps.
type Collections struct {
	Strings  []string          `json:"strings"`
	Nested   [][]int           `json:"nested"`
	Bytes    []byte            `json:"bytes"`
	Raw      Blob              `json:"raw"`
	Fixed    [2]byte           `json:"fixed"`
	ByName   map[string]int    `json:"by_name"`
	ByInt    map[int]string    `json:"by_int"`
	ByUint   map[uint8]bool    `json:"by_uint"`
	ByLevel  map[Level]int     `json:"by_level"`
	Pointers map[string]*Inner `json:"pointers"`
	Items    []*Inner          `json:"items"`
	Any      any               `json:"any"`
	JSON     json.RawMessage   `json:"json"`
	Custom   Custom            `json:"custom"`
	Levels   []Level           `json:"levels"`
	Anon     struct {
		A int     `json:"a"`
		B *string `json:"b,omitempty"`
	} `json:"anon"`
}

// Blob is a named byte slice.
type Blob []byte

// Times has times.
type Times struct {
	At    time.Time      `json:"at"`
	Maybe *time.Time     `json:"maybe"`
	Wait  time.Duration  `json:"wait"`
	Later *time.Duration `json:"later,omitempty"`
}

// Tree is recursive through a slice and a pointer.
type Tree struct {
	Name     string `json:"name"`
	Children []Tree `json:"children"`
	Parent   *Tree  `json:"parent"`
}

// Pair is generic.
type Pair[K comparable, V any] struct {
	Key   K `json:"key"`
	Value V `json:"value"`
}

// Generic holds instances of Pair.
type Generic struct {
	A Pair[string, int]   `json:"a"`
	B Pair[int, []string] `json:"b"`
}
