//go:build darwin || dragonfly || freebsd || netbsd || openbsd

package main

import "golang.org/x/sys/unix"

// ioctlReadTermios reads a terminal's settings; only a terminal has them.
const ioctlReadTermios = unix.TIOCGETA
