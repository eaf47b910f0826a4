package generator

import "testing"

func TestClosest(t *testing.T) {
	keys := keyNames()
	for _, tc := range []struct{ word, want string }{
		{"max_attemps", "max_attempts"},
		{"maxAttempts", "max_attempts"},
		{"max-attempts", "max_attempts"},
		{"retrydelay", "retry_delay"},
		{"deadletter", "dead_letter"},
		{"dead_leter", "dead_letter"},
		{"brokr", "broker"},
		{"acks", "ack"},
		{"colour", ""},
		{"priority", ""},
		{"x", ""},
	} {
		if got := closest(tc.word, keys); got != tc.want {
			t.Errorf("closest(%q) = %q, want %q", tc.word, got, tc.want)
		}
	}
	if got := closest("subscribr", []string{"subscriber"}); got != "subscriber" {
		t.Errorf("directive name: %q", got)
	}
	if got := closest("publisher", []string{"subscriber"}); got != "" {
		t.Errorf("publisher is no typo of subscriber, got %q", got)
	}
}

func TestEditDistance(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		want int
	}{
		{"", "", 0}, {"abc", "", 3}, {"", "ab", 2}, {"kitten", "sitting", 3}, {"same", "same", 0}, {"ab", "ba", 2},
	} {
		if got := editDistance(tc.a, tc.b); got != tc.want {
			t.Errorf("editDistance(%q, %q) = %d, want %d", tc.a, tc.b, got, tc.want)
		}
	}
}
