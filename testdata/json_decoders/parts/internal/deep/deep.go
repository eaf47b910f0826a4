// Package deep is internal to package parts: package decoders cannot name
// its types.
package deep

// Deep is a struct.
type Deep struct {
	Level int `json:"level"`
}
