// Package textbody holds the one rule by which the dead-letter tools (dlq
// show, the console) tell a body or a value they can show as text from
// one they show as bytes.
package textbody

import "unicode/utf8"

// IsText reports whether p is valid UTF-8 without control characters
// other than tab, line feed and carriage return (and without DEL).
func IsText(p []byte) bool {
	if !utf8.Valid(p) {
		return false
	}
	for _, r := range string(p) {
		if r < 0x20 && r != '\n' && r != '\t' && r != '\r' || r == 0x7f {
			return false
		}
	}
	return true
}
