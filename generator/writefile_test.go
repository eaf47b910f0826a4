package generator

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestWriteFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "api.yaml")
	for _, content := range []string{"first\n", "second, longer than the first\n"} {
		if err := WriteFile(path, []byte(content)); err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(path)
		if err != nil || string(got) != content {
			t.Fatalf("file holds %q (%v), want %q", got, err, content)
		}
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o644 {
		t.Errorf("mode %v, want 0644", fi.Mode().Perm())
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 1 {
		t.Errorf("directory holds %d entries, want only the file (no temporary left)", len(entries))
	}

	// A failed write says where, wraps the cause and keeps the old file.
	missing := filepath.Join(dir, "no", "such", "dir", "api.yaml")
	err = WriteFile(missing, []byte("x"))
	var pe *fs.PathError
	if err == nil || !strings.HasPrefix(err.Error(), "generator: write "+missing+": ") || !errors.As(err, &pe) || !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("write into a missing directory: err = %v, want a wrapped *fs.PathError for a missing file", err)
	}
	if err := os.Mkdir(filepath.Join(dir, "taken"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "taken", "inside"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	// Renaming a file over a directory that is not empty fails.
	err = WriteFile(filepath.Join(dir, "taken"), []byte("x"))
	var le *os.LinkError
	if !errors.As(err, &le) {
		t.Errorf("write over a directory: err = %v, want a wrapped *os.LinkError", err)
	}
	got, _ := os.ReadFile(path)
	if string(got) != "second, longer than the first\n" {
		t.Errorf("the old file holds %q after failed writes", got)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 2 {
		t.Errorf("directory holds %d entries after failed writes, want the file and the directory (no temporary left)", len(entries))
	}
}
