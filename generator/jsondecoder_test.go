package generator

import "testing"

// TestImportable follows the go command's rule for internal directories.
func TestImportable(t *testing.T) {
	cases := []struct {
		from, to string
		want     bool
	}{
		{"example.com/a", "example.com/b", true},
		{"example.com/a", "example.com/a/internal", true},
		{"example.com/a/b", "example.com/a/internal/x", true},
		{"example.com/a", "example.com/a/internal/x", true},
		{"example.com/b", "example.com/a/internal/x", false},
		{"example.com/ab", "example.com/a/internal/x", false},
		{"example.com/a/x/y", "example.com/a/x/internal", true},
		{"example.com/a", "example.com/a/x/internal", false},
		{"example.com/a", "internal/poll", false},
		{"net", "internal/poll", true},
		{"example.com/a", "example.com/a/internal/b/internal/c", false},
		{"example.com/a/internal/b/d", "example.com/a/internal/b/internal/c", true},
	}
	for _, c := range cases {
		if got := importable(c.from, c.to); got != c.want {
			t.Errorf("importable(%q, %q) = %v, want %v", c.from, c.to, got, c.want)
		}
	}
}
