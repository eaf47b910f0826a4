// Package whole has message types that a generated JSON decoder leaves to
// encoding/json whole, and one it decodes although it reaches decode
// methods of the standard library.
package whole

import (
	"context"
	"net/netip"
	"time"
)

// code decodes itself: encoding/json calls its method only on a body it
// has checked, and once.
type code string

func (c *code) UnmarshalText(b []byte) error { *c = code(b); return nil }

// inner reaches code through a slice.
type inner struct {
	Codes []code `json:"codes"`
}

// Custom reaches code through a struct: no decoder.
type Custom struct {
	In inner `json:"in"`
	N  int   `json:"n"`
}

// Keyed reaches code as a map key: no decoder.
type Keyed struct {
	M map[code]int `json:"m"`
}

type embP struct{ P int }

// EmbP names an embedded pointer to an unexported struct type, which
// encoding/json panics setting: no decoder.
type EmbP struct {
	*embP `json:"embp"`
	Z     int `json:"z"`
}

// Stamp reaches only the standard library's own decode methods, which
// fill their receiver and nothing else: it has a decoder.
type Stamp struct {
	At   time.Time  `json:"at"`
	From netip.Addr `json:"from"`
	N    int        `json:"n"`
}

//stream:subscriber "custom" broker=zeromq
func TakeCustom(ctx context.Context, c Custom) error { return nil }

//stream:subscriber "keyed" broker=zeromq
func TakeKeyed(ctx context.Context, k Keyed) error { return nil }

//stream:subscriber "embp" broker=zeromq
func TakeEmbP(ctx context.Context, e EmbP) error { return nil }

//stream:subscriber "stamps" broker=zeromq
func TakeStamp(ctx context.Context, s Stamp) error { return nil }
