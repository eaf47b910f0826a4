package textbody

import "testing"

func TestIsText(t *testing.T) {
	for _, c := range []struct {
		in   string
		want bool
	}{
		{"", true},
		{"plain text", true},
		{"tab\tline\nreturn\r", true},
		{"café ☕", true},
		{"nul\x00", false},
		{"escape\x1b[31m", false},
		{"del\x7f", false},
		{"caf\xe9", false},
	} {
		if got := IsText([]byte(c.in)); got != c.want {
			t.Errorf("IsText(%q) = %v, want %v", c.in, got, c.want)
		}
	}
}
