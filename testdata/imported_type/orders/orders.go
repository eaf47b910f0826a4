// Package orders declares message types that another package consumes.
package orders

// Order is placed by a customer.
type Order struct {
	ID    string   `json:"id"`
	Lines []string `json:"lines"`
}

// Refund gives money back.
type Refund struct {
	OrderID string `json:"order_id"`
}
