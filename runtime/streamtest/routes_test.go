package streamtest

import (
	"strings"
	"testing"

	"github.com/streamgen/streamgen/runtime"
)

func TestTopicMatches(t *testing.T) {
	for _, tc := range []struct {
		pattern, key string
		want         bool
	}{
		{"order.placed", "order.placed", true},
		{"order.placed", "order.cancelled", false},
		{"order.*", "order.placed", true},
		{"order.*", "order", false},
		{"order.*", "order.placed.eu", false},
		{"order.#", "order", true},
		{"order.#", "order.placed", true},
		{"order.#", "order.placed.eu", true},
		{"order.#", "orders.placed", false},
		{"#", "anything.at.all", true},
		{"#", "", true},
		{"*.placed", "order.placed", true},
		{"*.placed", "placed", false},
		{"#.eu", "eu", true},
		{"#.eu", "order.placed.eu", true},
		{"#.eu", "order.placed.us", false},
		{"order.#.eu", "order.eu", true},
		{"order.#.eu", "order.a.b.eu", true},
		{"order.#.#.eu", "order.eu", true},
		{"*.*", "a.b", true},
		{"*.*", "a", false},
		{"#.*", "a", true},
		{"#.*", "", true}, // the empty key is one empty word
		{"order*", "orderx", false},
	} {
		if got := topicMatches(tc.pattern, tc.key); got != tc.want {
			t.Errorf("topicMatches(%q, %q) = %v, want %v", tc.pattern, tc.key, got, tc.want)
		}
	}
}

// TestTopicMatchesHostilePattern matches a pattern of many # against a
// long key that it fails on: without backtracking it finishes at once
// (a backtracking matcher takes exponential time here).
func TestTopicMatchesHostilePattern(t *testing.T) {
	pattern := strings.Repeat("#.a.", 30) + "b"
	key := strings.TrimSuffix(strings.Repeat("a.", 120), ".")
	if topicMatches(pattern, key) {
		t.Fatal("matched a key without the last word")
	}
}

func TestRoutes(t *testing.T) {
	if !routes(runtime.FanoutExchange, "", "whatever") {
		t.Error("fanout did not route")
	}
	if !routes(runtime.DirectExchange, "a.*", "a.*") || routes(runtime.DirectExchange, "a.*", "a.b") {
		t.Error("direct matched other than by equality")
	}
	if !routes(runtime.TopicExchange, "a.*", "a.b") {
		t.Error("topic did not match a pattern")
	}
}
