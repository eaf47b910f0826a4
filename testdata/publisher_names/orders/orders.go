// Package orders declares an Order type whose name is also used by the
// package consuming it.
package orders

// Order is the orders service's order.
type Order struct{ ID string }
