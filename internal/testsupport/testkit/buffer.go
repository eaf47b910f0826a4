package testkit

import (
	"strings"
	"sync"
)

// SyncBuffer collects what is written to it, safe for a writer and a
// reader at the same time. The zero value is ready to use.
type SyncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

// Write appends p.
func (s *SyncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

// String returns everything written so far.
func (s *SyncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// Lines returns everything written so far, split at each newline; a final
// newline does not start another line.
func (s *SyncBuffer) Lines() []string {
	return strings.Split(strings.TrimSuffix(s.String(), "\n"), "\n")
}
