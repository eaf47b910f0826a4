// Hand-written wiring that happens to use the generated file's name.

package foreign

// Wire is the user's own.
func Wire() {}
