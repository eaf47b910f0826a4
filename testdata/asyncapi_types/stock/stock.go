// Package stock declares the stock level that package catalog uses.
package stock

// Level is how many items are in stock.
type Level struct {
	Count uint32 `json:"count"` // items on the shelves
	// Warehouses lists the stock of each warehouse, nil when unknown.
	Warehouses map[string]Level `json:"warehouses"`
}
