package deadletter

import (
	"bytes"
	"io"
)

func bytesReader(b []byte) io.Reader { return bytes.NewReader(b) }

func trimSpace(b []byte) []byte { return bytes.TrimSpace(b) }
