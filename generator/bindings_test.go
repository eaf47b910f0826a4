package generator

import (
	"slices"
	"testing"
)

func TestParseBindings(t *testing.T) {
	if got := parseBindings("order.placed, order.cancelled,,x"); !slices.Equal(got, []string{"order.placed", "order.cancelled", "", "x"}) {
		t.Errorf("parseBindings = %q", got)
	}
}
