// Package predeclared declares, at package scope, names the language
// predeclares and generated code would use (new, append, len, string,
// bool, byte, nil): the generated file must compile all the same.
package predeclared

import "context"

// These hide the builtin functions.
func new() int    { return 0 }
func append() int { return 1 }

var len = 3

// These hide the predeclared types and nil.
type (
	string struct{ Text []rune }
	bool   int
	byte   float64
)

var nil = "not nil"

// Item is an element of Msg's slices.
type Item struct {
	N int `json:"n"`
}

// Msg has fields of every kind the decoders write code for.
type Msg struct {
	ID    int     `json:"id"`
	Items []Item  `json:"items"`
	Ptrs  []*Item `json:"ptrs"`
	Ptr   *Item   `json:"ptr"`
	Ns    []int   `json:"ns"`
	Count *int    `json:"count"`
	Name  string  `json:"name"`
	OK    bool    `json:"ok"`
}

//stream:subscriber "msgs" broker=zeromq
func Take(ctx context.Context, m Msg) error {
	var ok error
	return ok
}

var _, _, _, _ = new, append, len, nil
