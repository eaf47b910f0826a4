package generator

import (
	"bytes"
	"fmt"
	"strings"
)

// codeWriter writes Go source already in gofmt's layout: one statement a
// line, indented with tabs by the blocks it is in. The generated file's
// bulk (its publishers and JSON decoders) is written with it, so that only
// the small part that gofmt must align goes through go/format.
type codeWriter struct {
	buf   bytes.Buffer
	depth int
}

// line writes one line at the current depth.
func (w *codeWriter) line(format string, args ...any) {
	for range w.depth {
		w.buf.WriteByte('\t')
	}
	fmt.Fprintf(&w.buf, format, args...)
	w.buf.WriteByte('\n')
}

// open writes a line that opens a block ("if x {") and indents what
// follows.
func (w *codeWriter) open(format string, args ...any) {
	w.line(format, args...)
	w.depth++
}

// close ends the innermost block with text ("}" or "} else {").
func (w *codeWriter) close(text string) {
	w.depth--
	w.line("%s", text)
	if strings.HasSuffix(text, "{") {
		w.depth++
	}
}

// blank writes an empty line, as between two declarations.
func (w *codeWriter) blank() { w.buf.WriteByte('\n') }

// comment writes text, whose lines each start with //, at the current
// depth.
func (w *codeWriter) comment(text string) {
	for l := range strings.SplitSeq(text, "\n") {
		w.line("%s", l)
	}
}
