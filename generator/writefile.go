package generator

import (
	"fmt"
	"os"
	"path/filepath"
)

// WriteFile writes data to path atomically: to a temporary file in the
// same directory, renamed over path. A reader never sees half a file, and
// a failed write leaves the old one as it was. The file gets mode 0644.
// Errors wrap the cause (an *fs.PathError or *os.LinkError).
func WriteFile(path string, data []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*.tmp")
	if err != nil {
		return fmt.Errorf("generator: write %s: %w", path, err)
	}
	defer os.Remove(tmp.Name()) // after a successful rename there is nothing to remove
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return fmt.Errorf("generator: write %s: %w", path, err)
	}
	if err := tmp.Chmod(0o644); err != nil {
		tmp.Close()
		return fmt.Errorf("generator: write %s: %w", path, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("generator: write %s: %w", path, err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("generator: write %s: %w", path, err)
	}
	return nil
}
