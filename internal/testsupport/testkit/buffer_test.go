package testkit

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
)

func TestSyncBufferTakesAWriterAndAReaderAtOnce(t *testing.T) {
	var b SyncBuffer
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() {
			for i := range 100 {
				fmt.Fprintf(&b, "writer %d line %d\n", w, i)
			}
		})
	}
	wg.Go(func() {
		for range 100 {
			_ = b.String() // the race detector checks this against the writers
		}
	})
	wg.Wait()
	lines := b.Lines()
	if len(lines) != 400 {
		t.Fatalf("%d lines, want 400", len(lines))
	}
	for _, l := range lines {
		if !strings.HasPrefix(l, "writer ") {
			t.Fatalf("a line is mixed up: %q", l)
		}
	}
}

func TestSyncBufferLinesEndWithoutAnEmptyLine(t *testing.T) {
	var b SyncBuffer
	b.Write([]byte("one\ntwo\n"))
	if got := b.Lines(); !slices.Equal(got, []string{"one", "two"}) {
		t.Errorf("Lines() = %q, want [one two]", got)
	}
	b.Write([]byte("three"))
	if got := b.Lines(); !slices.Equal(got, []string{"one", "two", "three"}) {
		t.Errorf("Lines() = %q, want [one two three]", got)
	}
	if got := b.String(); got != "one\ntwo\nthree" {
		t.Errorf("String() = %q", got)
	}
}
