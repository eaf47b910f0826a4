package benchpair

import (
	"encoding/json"
	"fmt"
)

// Order is the message every pair benchmark moves: an order with as many
// items as it takes to reach the payload size, so that decoding does the
// work a real message asks for (strings, numbers, a slice of structs).
type Order struct {
	ID       int         `json:"id"`
	Customer string      `json:"customer"`
	Items    []OrderItem `json:"items"`
}

// OrderItem is one line of an Order.
type OrderItem struct {
	SKU   string  `json:"sku"`
	Qty   int     `json:"qty"`
	Price float64 `json:"price"`
}

// Payload sizes of the benchmarks.
const (
	Small = 256
	Large = 16 << 10
)

// NewOrder returns an Order whose JSON encoding is about size bytes (never
// less than size, and never more than one item larger).
func NewOrder(size int) Order {
	o := Order{ID: 4711, Customer: "ACME Corporation, Building 7"}
	for i := 0; ; i++ {
		b, err := json.Marshal(o)
		if err != nil {
			panic(err) // an Order always encodes
		}
		if len(b) >= size {
			return o
		}
		o.Items = append(o.Items, OrderItem{SKU: fmt.Sprintf("SKU-%06d", i), Qty: 1 + i%7, Price: 9.95 + float64(i%13)})
	}
}

// OrderJSON returns the JSON encoding of NewOrder(size).
func OrderJSON(size int) []byte {
	b, err := json.Marshal(NewOrder(size))
	if err != nil {
		panic(err)
	}
	return b
}

// SizeName writes a payload size as the benchmark names show it: 256B,
// 16KiB.
func SizeName(size int) string {
	if size >= 1024 && size%1024 == 0 {
		return fmt.Sprintf("%dKiB", size/1024)
	}
	return fmt.Sprintf("%dB", size)
}

// Quote is the request of the request/reply benchmark, and Price its
// reply.
type Quote struct {
	SKU      string `json:"sku"`
	Quantity int    `json:"quantity"`
}

// Price is the reply to a Quote.
type Price struct {
	SKU   string `json:"sku"`
	Cents int64  `json:"cents"`
}

// PriceOf is the benchmark's answer to q.
func PriceOf(q Quote) Price { return Price{SKU: q.SKU, Cents: 250 * int64(q.Quantity)} }
