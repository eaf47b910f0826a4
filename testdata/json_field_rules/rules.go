// Package rules has message types that embed funcs and channels which
// encoding/json never decodes into, by its rules for fields of one name: a
// shallower field hides a deeper one, a tagged field wins a tie at one
// depth, a tie left decodes neither, and an embedded struct with an invalid
// tag name is promoted as if it had none.
package rules

import "context"

// Audit has a hook no message carries.
type Audit struct {
	Hook func()
	By   string
}

// Order's own Hook hides Audit.Hook.
type Order struct {
	Audit
	Hook string
}

// Left and Right both have a Cb.
type (
	Left  struct{ Cb func() }
	Right struct{ Cb chan int }
)

// Tie embeds two Cb at one depth: encoding/json decodes neither.
type Tie struct {
	Left
	Right
}

// Counter names its field Cb in JSON.
type Counter struct {
	N int `json:"Cb"`
}

// Win embeds two Cb at one depth; the tagged one is decoded.
type Win struct {
	Left
	Counter
}

// Loose has a channel named X.
type Loose struct{ X chan int }

// Renamed's tag name is not valid, so Loose is promoted, and X hides Loose.X.
type Renamed struct {
	Loose `json:"bad'name"`
	X     int
}

//stream:subscriber "orders"
func TakeOrder(ctx context.Context, o Order) error { return nil }

//stream:subscriber "ties"
func TakeTie(ctx context.Context, t Tie) error { return nil }

//stream:subscriber "wins"
func TakeWin(ctx context.Context, w Win) error { return nil }

//stream:subscriber "renamed"
func TakeRenamed(ctx context.Context, r Renamed) error { return nil }
