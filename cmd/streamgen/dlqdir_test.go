package main

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Every command but keep and import refuses a -dir that is not there,
// and creates nothing: a mistyped path is not an empty store. import
// makes the directory.
func TestDLQDirThatIsNotThere(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "mistyped")
	for _, args := range [][]string{
		{"ls", "-dir", dir},
		{"show", "-dir", dir},
		{"export", "-dir", dir},
		{"purge", "-dir", dir, "-yes"},
		{"replay", "-dir", dir, "-yes", "-to", "tcp://127.0.0.1:1"},
	} {
		o, e, status := dlqRun(t, "", args...)
		want := "directory " + dir + " does not exist: check the path (streamgen dlq keep creates it)"
		if status != 1 || !strings.Contains(e, want) {
			t.Fatalf("dlq %s: status %d\n%s%s\nwant status 1 and %q", strings.Join(args, " "), status, o, e, want)
		}
		if _, err := os.Stat(dir); !errors.Is(err, fs.ErrNotExist) {
			t.Fatalf("dlq %s made the directory: %v", args[0], err)
		}
	}
	letter := `{"properties":{"message_id":"i-1","type":"Card"},"reason":"declined","source":"cards","body":"{}","body_encoding":"text"}` + "\n"
	if o, e, status := dlqRun(t, letter, "import", "-dir", dir); status != 0 || !strings.Contains(e, "imported 1 letter into") {
		t.Fatalf("import -dir into a new directory: status %d\n%s%s", status, o, e)
	}
	if o, e, status := dlqRun(t, "", "ls", "-dir", dir); status != 0 || !strings.Contains(o, "declined") {
		t.Fatalf("ls -dir after the import: status %d\n%s%s", status, o, e)
	}
}
