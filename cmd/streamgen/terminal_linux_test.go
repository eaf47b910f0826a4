package main

import (
	"fmt"
	"os"
	"testing"

	"golang.org/x/sys/unix"
)

// A pseudo-terminal is a terminal, both its sides.
func TestIsTerminalOnAPseudoTerminal(t *testing.T) {
	ptmx, err := os.OpenFile("/dev/ptmx", os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Fatalf("open a pseudo-terminal: %v", err)
	}
	defer func() { _ = ptmx.Close() }()
	if err := unix.IoctlSetPointerInt(int(ptmx.Fd()), unix.TIOCSPTLCK, 0); err != nil {
		t.Fatalf("unlock the pseudo-terminal: %v", err)
	}
	n, err := unix.IoctlGetInt(int(ptmx.Fd()), unix.TIOCGPTN)
	if err != nil {
		t.Fatalf("name the pseudo-terminal: %v", err)
	}
	pts, err := os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Fatalf("open its terminal side: %v", err)
	}
	defer func() { _ = pts.Close() }()
	if !isTerminal(pts) || !isTerminal(ptmx) {
		t.Errorf("isTerminal: %v on %s, %v on /dev/ptmx; want true", isTerminal(pts), pts.Name(), isTerminal(ptmx))
	}
}
