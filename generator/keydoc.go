package generator

import (
	"bytes"
	"errors"
	"fmt"
	"strings"

	"github.com/streamgen/streamgen/runtime"
)

// The annotation reference, docs/annotations.md, and the key list of this
// package's documentation (doc.go) are written from keySpecs: the keys, in
// its order, with what each says of itself. Nothing else lists the keys.
// TestKeyDocsAreCurrent fails when either is stale; this rewrites both:
//
//go:generate go test -count=1 -run=TestKeyDocsAreCurrent . -args -update-docs

// keyReferenceBegin and keyReferenceEnd enclose the part of
// docs/annotations.md that keyReference writes.
const (
	keyReferenceBegin = "<!-- BEGIN KEYS: written by `make docs` from the table in generator/keys.go; edit the table there, not here -->"
	keyReferenceEnd   = "<!-- END KEYS -->"
)

// keyListIntro is the line of doc.go after which, following an empty
// comment line, keyList's lines stand.
const keyListIntro = "// or the ZeroMQ subscription. Keys follow as key=value, all optional:"

// keyReference returns the Markdown of the annotation reference: a table of
// every key, then a section of each.
func keyReference() string {
	var b strings.Builder
	b.WriteString("| key | what it sets | default | brokers | applies to |\n|---|---|---|---|---|\n")
	for _, k := range keySpecs() {
		fmt.Fprintf(&b, "| [`%s`](#%s) | %s | %s | %s | %s |\n", k.name, k.name, k.doc.summary, k.doc.dflt, brokersOf(k), levelOf(k))
	}
	for _, k := range keySpecs() {
		fmt.Fprintf(&b, "\n### `%s`\n\n", k.name)
		fmt.Fprintf(&b, "%s.\n\n", sentence(k.doc.summary))
		fmt.Fprintf(&b, "- **Values:** %s\n", k.doc.values)
		fmt.Fprintf(&b, "- **Default:** %s\n", k.doc.dflt)
		fmt.Fprintf(&b, "- **Brokers:** %s\n", brokersOf(k))
		switch k.level {
		case queueLevel:
			b.WriteString("- **Applies to:** the subscription: set it on one of its handlers, or on several with the same value\n")
		case typeLevel:
			b.WriteString("- **Applies to:** the message type: each handler of the subscription has its own\n")
		}
		fmt.Fprintf(&b, "- **Example:** `//stream:subscriber \"jobs\" %s`\n", exampleDirective(k))
		fmt.Fprintf(&b, "- **More:** %s\n", k.doc.guide)
	}
	return b.String()
}

// exampleDirective returns the keys of a directive that shows k's example:
// the example, after what it needs besides to be valid (broker=, when k
// alone does not say the broker; the keys it goes with).
func exampleDirective(k keySpec) string {
	switch k.name {
	case "out_retry":
		return "broker=zeromq max_attempts=2 " + k.example
	case "retry_delay":
		return "max_attempts=5 " + k.example
	case "delivery_limit":
		return "queue_type=quorum " + k.example
	case "retry":
		return "queue_type=quorum max_attempts=5 retry_delay=30s " + k.example
	case "exchange", "exchange_type", "binding":
		return "exchange=orders exchange_type=topic binding=order.placed"
	case "batch_size", "batch_wait":
		return "broker=rabbitmq batch_size=100 batch_wait=50ms"
	case "broker":
		return k.example
	}
	if k.only != runtime.AnyBroker {
		return k.example
	}
	return "broker=rabbitmq " + k.example
}

// brokersOf names the brokers k exists for.
func brokersOf(k keySpec) string {
	switch k.only {
	case runtime.RabbitMQ:
		return "RabbitMQ"
	case runtime.ZeroMQ:
		return "ZeroMQ"
	}
	return "RabbitMQ, ZeroMQ"
}

// levelOf says what k configures, as the reference's table says it.
func levelOf(k keySpec) string {
	if k.level == typeLevel {
		return "message type"
	}
	return "subscription"
}

// sentence capitalizes a summary's first letter.
func sentence(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

// keyList returns the lines of doc.go's key list, as comment lines: each
// key, what it applies to (and the broker it is for), and its example.
func keyList() []string {
	lines := []string{fmt.Sprintf("//\t%-24s%-30s%s", "key", "applies to", "example")}
	for _, k := range keySpecs() {
		to := levelOf(k)
		if k.only != runtime.AnyBroker {
			to += " (" + string(k.only) + ")"
		}
		lines = append(lines, fmt.Sprintf("//\t%-24s%-30s%s", k.name, to, k.example))
	}
	return lines
}

// errNoRegion is returned when a file lacks the place the key docs go.
var errNoRegion = errors.New("generator: the file has no place for the key docs")

// withKeyReference returns page, a Markdown page, with keyReference
// between its markers.
func withKeyReference(page []byte) ([]byte, error) {
	begin := bytes.Index(page, []byte(keyReferenceBegin+"\n"))
	end := bytes.Index(page, []byte("\n"+keyReferenceEnd))
	if begin < 0 || end < begin {
		return nil, fmt.Errorf("%w: want the lines %s and %s", errNoRegion, keyReferenceBegin, keyReferenceEnd)
	}
	var out bytes.Buffer
	out.Write(page[:begin+len(keyReferenceBegin)+1])
	out.WriteString("\n")
	out.WriteString(keyReference())
	out.Write(page[end:])
	return out.Bytes(), nil
}

// withKeyList returns src, doc.go's source, with keyList in place of the
// tab-indented comment lines after keyListIntro and an empty comment line.
func withKeyList(src []byte) ([]byte, error) {
	lines := strings.Split(string(src), "\n")
	for i, l := range lines {
		if l != keyListIntro || i+2 >= len(lines) || lines[i+1] != "//" {
			continue
		}
		end := i + 2
		for end < len(lines) && strings.HasPrefix(lines[end], "//\t") {
			end++
		}
		out := append(append(append([]string{}, lines[:i+2]...), keyList()...), lines[end:]...)
		return []byte(strings.Join(out, "\n")), nil
	}
	return nil, fmt.Errorf("%w: want the line %q, then //", errNoRegion, keyListIntro)
}
