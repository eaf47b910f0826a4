// Package catalog publishes its message types in an AsyncAPI document:
// embedded, nested, recursive, generic and imported types, and the json tag
// options that change their JSON.
package catalog

import (
	"context"
	"errors"
	"time"

	"github.com/streamgen/streamgen/testdata/asyncapi_types/money"
	"github.com/streamgen/streamgen/testdata/asyncapi_types/stock"
)

// Product is an item of the catalog.
type Product struct {
	// Audit says who changed the product last, and when.
	Audit
	*Origin
	// SKU identifies the product.
	SKU  string `json:"sku"`
	Name string `json:"name,omitempty"` // hides Audit's name, which is deeper
	// Price is what the product costs.
	Price    money.Amount      `json:"price"`
	Discount *Amount           `json:"discount,omitempty"`
	Tags     []string          `json:"tags,omitempty"`
	Attrs    map[string]string `json:"attrs"`
	Image    []byte            `json:"image,omitempty"`
	// Weight is in kilograms, written as a string.
	Weight  float64        `json:"weight_kg,string"`
	ID      int64          `json:"id,string"`
	Active  *bool          `json:"active,string"`
	Stock   *stock.Level   `json:"stock"`
	Parent  *Category      `json:"parent,omitempty"`
	Related Page[Product]  `json:"related"`
	Status  Status         `json:"status"`
	Dims    [3]int16       `json:"dims"`
	Counts  map[uint32]int `json:"counts,omitempty"`
	Note    struct {
		// Text is free text.
		Text string  `json:"text"`
		By   *string `json:"by"`
	} `json:"note"`
	Seen    time.Time  `json:"seen,omitzero"`
	Expires *time.Time `json:"expires"`
	Meta    any        `json:"meta"`
	Deleted bool       `json:"-"`
	Always  struct{}   `json:"always,omitempty"`
	private int
}

// Audit records a change.
type Audit struct {
	// ChangedAt is when.
	ChangedAt time.Time `json:"changed_at"`
	// By is who: Origin has a By too, at the same depth and also tagged,
	// so encoding/json writes neither.
	By   string `json:"by"`
	Name string `json:"name"`
	// Editor is written under its Go name: it has no json tag.
	Editor string
}

// Origin is where a product comes from. It is embedded through a pointer,
// so its fields are left out when it is nil.
type Origin struct {
	Country string `json:"country"`
	By      string `json:"by"`
}

// Amount is a discount, in percent.
type Amount struct {
	Percent uint8 `json:"percent"`
}

// Category is a node of the category tree.
type Category struct {
	Name     string     `json:"name"`
	Parent   *Category  `json:"parent,omitempty"`
	Children []Category `json:"children"`
}

// Page is one page of a list.
type Page[T any] struct {
	Items []T    `json:"items"`
	Next  string `json:"next,omitempty"`
}

// Status is the state of a product, written as its name.
type Status int

// MarshalText writes the status's name.
func (s Status) MarshalText() ([]byte, error) {
	if s == 0 {
		return []byte("draft"), nil
	}
	return []byte("live"), nil
}

// UnmarshalText reads a status's name.
func (s *Status) UnmarshalText(b []byte) error {
	switch string(b) {
	case "draft":
		*s = 0
	case "live":
		*s = 1
	default:
		return errors.New("unknown status")
	}
	return nil
}

// Archived is a product taken out of the catalog. It travels under the
// wire name Product too, on another queue.
type Archived struct {
	SKU string `json:"sku"`
}

// Update stores a changed product.
//
//stream:subscriber "products" broker=rabbitmq
func Update(ctx context.Context, p Product) error { return nil }

//stream:subscriber "archive" broker=rabbitmq type=Product
func Archive(ctx context.Context, a *Archived) error { return nil }
