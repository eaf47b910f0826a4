// Package beta declares message types consumed by package maporder.
package beta

// Msg0 is a message of package beta.
type Msg0 struct{ N int }

// Msg1 is a message of package beta.
type Msg1 struct{ N int }

// Msg2 is a message of package beta.
type Msg2 struct{ N int }

// Msg3 is a message of package beta.
type Msg3 struct{ N int }

// Msg4 is a message of package beta.
type Msg4 struct{ N int }

// Msg5 is a message of package beta.
type Msg5 struct{ N int }
