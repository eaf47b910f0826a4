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

// import refuses a line that is not a letter, or whose text JSON would
// read as other bytes (a text body that is not UTF-8): it fails, naming
// the line, and imports none of it; it imported such bodies as U+FFFD,
// and null and {} as empty letters, and exited 0.
func TestDLQImportFailsOnALineThatIsNotALetter(t *testing.T) {
	good := `{"properties":{"message_id":"i-1","type":"Card"},"reason":"declined","source":"cards","body":"{}","body_encoding":"text"}`
	for name, line := range map[string]string{
		"null":                     `null`,
		"{}":                       `{}`,
		"a body that is not UTF-8": "{\"properties\":{\"message_id\":\"i-2\"},\"body\":\"caf\xe9\",\"body_encoding\":\"text\"}",
	} {
		dir := filepath.Join(t.TempDir(), "dlq")
		o, e, status := dlqRun(t, good+"\n"+line+"\n", "import", "-dir", dir)
		if status != 1 || !strings.Contains(e, "line 2") || !strings.Contains(e, "imported 1 letter into") {
			t.Errorf("import of %s: status %d, want 1, the line named and the letter before it imported:\n%s%s", name, status, o, e)
			continue
		}
		if o, _, _ := dlqRun(t, "", "show", "-dir", dir); strings.Count("\n"+o, "\nmessage ") != 1 || !strings.Contains(o, "message i-1 ") {
			t.Errorf("after the import of %s, the directory holds:\n%s", name, o)
		}
	}
}
