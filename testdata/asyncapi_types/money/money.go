// Package money declares an amount type that package catalog uses.
package money

// Amount is a sum of money.
type Amount struct {
	// Cents is the sum in hundredths.
	Cents int64 `json:"cents"`
	// Currency is an ISO 4217 code.
	Currency Currency `json:"currency"`
}

// Currency is an ISO 4217 currency code, such as EUR.
type Currency string
