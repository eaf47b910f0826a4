package jsoncheck

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"time"
)

// Status is a named string.
type Status string

// Level is a named small integer.
type Level int8

// Tags is a named slice.
type Tags []string

// Scalars has a field of each basic kind, named and not.
type Scalars struct {
	B    bool    `json:"b"`
	S    string  `json:"s"`
	I    int     `json:"i"`
	I8   int8    `json:"i8"`
	I16  int16   `json:"i16"`
	I32  int32   `json:"i32"`
	I64  int64   `json:"i64"`
	U    uint    `json:"u"`
	U8   uint8   `json:"u8"`
	U16  uint16  `json:"u16"`
	U32  uint32  `json:"u32"`
	U64  uint64  `json:"u64"`
	UP   uintptr `json:"up"`
	F32  float32 `json:"f32"`
	F64  float64 `json:"f64"`
	St   Status  `json:"status"`
	Lv   Level   `json:"level"`
	Rune rune
	// Untagged, CamelCase and unexported fields follow encoding/json's
	// naming.
	CamelCase string
	//lint:ignore U1000 encoding/json leaves unexported fields alone, and so must the decoder
	hidden  string
	Skipped string `json:"-"`
	//lint:ignore SA5008 the name "-", which encoding/json takes from this tag
	Dash string `json:"-,"`
	//lint:ignore SA5008 a tag name encoding/json does not take: the field keeps its Go name
	Odd    string `json:"bad'name"`
	Spaced string `json:"with space,omitempty"`
	Ünï    string `json:"ñame"`
}

// Item is an element of Order's slices.
type Item struct {
	SKU   string  `json:"sku"`
	Qty   int     `json:"qty"`
	Price float64 `json:"price"`
}

// Order nests structs, pointers and slices.
type Order struct {
	ID       int       `json:"id"`
	Customer string    `json:"customer"`
	Items    []Item    `json:"items"`
	Refs     []*Item   `json:"refs"`
	Main     *Item     `json:"main"`
	Backup   Item      `json:"backup"`
	Note     *string   `json:"note"`
	Count    *int      `json:"count"`
	Grid     [][]int   `json:"grid"`
	Tags     Tags      `json:"tags"`
	Statuses []Status  `json:"statuses"`
	Levels   []*Level  `json:"levels"`
	Flags    []bool    `json:"flags"`
	Weights  []float32 `json:"weights"`
}

// Node is recursive.
type Node struct {
	Name     string `json:"name"`
	Children []Node `json:"children"`
	Next     *Node  `json:"next"`
}

// Upper implements encoding.TextUnmarshaler: it keeps the text in upper
// case, and refuses one with a "!".
type Upper string

// UnmarshalText implements encoding.TextUnmarshaler.
func (u *Upper) UnmarshalText(b []byte) error {
	if bytes.Contains(b, []byte("!")) {
		return errors.New("upper: no ! allowed")
	}
	*u = Upper(strings.ToUpper(string(b)))
	return nil
}

// Cents implements json.Unmarshaler: a number of cents written as "1.23".
type Cents int64

// MarshalJSON implements json.Marshaler.
func (c Cents) MarshalJSON() ([]byte, error) {
	return json.Marshal(fmt.Sprintf("%d.%02d", c/100, c%100))
}

// UnmarshalJSON implements json.Unmarshaler.
func (c *Cents) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return err
	}
	whole, frac, _ := strings.Cut(s, ".")
	var n int64
	for _, r := range whole + (frac + "00")[:2] {
		if r < '0' || r > '9' {
			return errors.New("not an amount")
		}
		n = n*10 + int64(r-'0')
	}
	*c = Cents(n)
	return nil
}

// Embedded is embedded in Mixed.
type Embedded struct {
	Inner string `json:"inner"`
}

// Quoted has a field with the string option.
type Quoted struct {
	N int `json:"n,string"`
}

// Mixed has the fields a decoder leaves to encoding/json.
type Mixed struct {
	Map       map[string]int    `json:"map"`
	Nested    map[string][]Item `json:"nested"`
	Any       any               `json:"any"`
	Bytes     []byte            `json:"bytes"`
	Array     [3]int            `json:"array"`
	Raw       json.RawMessage   `json:"raw"`
	Number    json.Number       `json:"number"`
	When      time.Time         `json:"when"`
	Until     *time.Time        `json:"until"`
	Anon      struct{ X int }   `json:"anon"`
	WithEmb   Wrapper           `json:"with_emb"`
	Quoted    Quoted            `json:"quoted"`
	PtrPtr    **int             `json:"ptr_ptr"`
	IntKeys   map[int]string    `json:"int_keys"`
	Ifaces    []any             `json:"ifaces"`
	Named     NamedPointer      `json:"named_pointer"`
	Dup       string            `json:"dup"`
	Dup2      string            `json:"Dup"`
	Untagged  string
	Tagged    string `json:"Untagged2"`
	Untagged2 string
}

// Methods has fields of types with their own UnmarshalText or
// UnmarshalJSON: no decoder is generated for it, encoding/json decodes it
// whole, so that each method is called as encoding/json calls it.
type Methods struct {
	Upper    Upper            `json:"upper"`
	Cents    Cents            `json:"cents"`
	CentsPtr *Cents           `json:"cents_ptr"`
	Keys     map[Upper]Status `json:"keys"`
	Uppers   []Upper          `json:"uppers"`
	When     time.Time        `json:"when"`
}

// Wrapper embeds a struct.
type Wrapper struct {
	Embedded
	Own int `json:"own"`
}

// NamedPointer is a named pointer type.
type NamedPointer *Item

// Empty has no fields.
type Empty struct{}

//stream:subscriber "scalars"
func TakeScalars(ctx context.Context, s Scalars) error { return nil }

//stream:subscriber "orders"
func TakeOrder(ctx context.Context, o *Order) error { return nil }

//stream:subscriber "nodes"
func TakeNode(ctx context.Context, n Node) error { return nil }

//stream:subscriber "mixed"
func TakeMixed(ctx context.Context, m Mixed) error { return nil }

//stream:subscriber "methods"
func TakeMethods(ctx context.Context, m Methods) error { return nil }

//stream:subscriber "wrappers"
func TakeWrapper(ctx context.Context, w Wrapper) error { return nil }

//stream:subscriber "empty"
func TakeEmpty(ctx context.Context, e Empty) error { return nil }

// decodeCalls counts the calls of Counted's and CountedText's decode
// methods, the way a method with a side effect shows each call: the tests
// hold the count through the Handler to json.Unmarshal's.
var decodeCalls atomic.Int64

// Counted is a struct with its own UnmarshalJSON, which counts its calls.
type Counted struct{ A int }

// UnmarshalJSON implements json.Unmarshaler.
func (c *Counted) UnmarshalJSON(b []byte) error {
	decodeCalls.Add(1)
	var v struct {
		A int `json:"a"`
	}
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	c.A = v.A
	return nil
}

// CountedText is a string with its own UnmarshalText, which counts its
// calls.
type CountedText string

// UnmarshalText implements encoding.TextUnmarshaler.
func (c *CountedText) UnmarshalText(b []byte) error {
	decodeCalls.Add(1)
	*c = CountedText(b)
	return nil
}

// Calls has fields whose types decode themselves, next to fields that do
// not.
type Calls struct {
	C Counted             `json:"c"`
	P *Counted            `json:"p"`
	L []Counted           `json:"l"`
	T CountedText         `json:"t"`
	K map[CountedText]int `json:"k"`
	X int                 `json:"x"`
}

// Euro has a tag name encoding/json v1 does not take (a currency sign),
// and encoding/json under GOEXPERIMENT=jsonv2 does: {"Euro":1} decodes to 1
// with the one, to 0 with the other.
type Euro struct {
	Euro int `json:"price€"`
}

//stream:subscriber "euros"
func TakeEuro(ctx context.Context, e Euro) error { return nil }

//stream:subscriber "calls"
func TakeCalls(ctx context.Context, c Calls) error { return nil }
