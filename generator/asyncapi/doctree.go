package asyncapi

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

// node is one value of a generated document: *object, []node, string,
// int, int64, uint64, bool, or nil (null).
type node any

// object is a JSON object (a YAML mapping) whose keys keep the order they
// were first set in, so that a document is written the same way every time.
type object struct {
	keys   []string
	values map[string]node
}

func newObject() *object { return &object{values: map[string]node{}} }

// set sets key to v and returns o. A key set again keeps its place.
func (o *object) set(key string, v node) *object {
	if _, ok := o.values[key]; !ok {
		o.keys = append(o.keys, key)
	}
	o.values[key] = v
	return o
}

// setNonEmpty sets key to s unless s is "".
func (o *object) setNonEmpty(key, s string) *object {
	if s != "" {
		o.set(key, s)
	}
	return o
}

// len returns the number of keys.
func (o *object) len() int { return len(o.keys) }

// writeJSON writes n as indented JSON (two spaces), keys in their order,
// without escaping <, > and & as HTML; the text ends with a newline.
func writeJSON(n node) ([]byte, error) {
	var b bytes.Buffer
	if err := jsonValue(&b, n, 0); err != nil {
		return nil, err
	}
	b.WriteByte('\n')
	return b.Bytes(), nil
}

func jsonValue(b *bytes.Buffer, n node, indent int) error {
	switch v := n.(type) {
	case *object:
		if v.len() == 0 {
			b.WriteString("{}")
			return nil
		}
		b.WriteString("{\n")
		for i, k := range v.keys {
			b.WriteString(strings.Repeat("  ", indent+1))
			jsonString(b, k)
			b.WriteString(": ")
			if err := jsonValue(b, v.values[k], indent+1); err != nil {
				return err
			}
			if i < len(v.keys)-1 {
				b.WriteByte(',')
			}
			b.WriteByte('\n')
		}
		b.WriteString(strings.Repeat("  ", indent))
		b.WriteByte('}')
	case []node:
		if len(v) == 0 {
			b.WriteString("[]")
			return nil
		}
		b.WriteString("[\n")
		for i, item := range v {
			b.WriteString(strings.Repeat("  ", indent+1))
			if err := jsonValue(b, item, indent+1); err != nil {
				return err
			}
			if i < len(v)-1 {
				b.WriteByte(',')
			}
			b.WriteByte('\n')
		}
		b.WriteString(strings.Repeat("  ", indent))
		b.WriteByte(']')
	case string:
		jsonString(b, v)
	default:
		s, err := scalarText(n)
		if err != nil {
			return err
		}
		b.WriteString(s)
	}
	return nil
}

// jsonString writes s as a JSON string. Bytes that are not UTF-8 become
// U+FFFD, as encoding/json writes them.
func jsonString(b *bytes.Buffer, s string) {
	var tmp bytes.Buffer
	enc := json.NewEncoder(&tmp)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s) // a string always encodes
	b.Write(bytes.TrimSuffix(tmp.Bytes(), []byte("\n")))
}

// scalarText writes a number, a boolean or null.
func scalarText(n node) (string, error) {
	switch v := n.(type) {
	case nil:
		return "null", nil
	case bool:
		return strconv.FormatBool(v), nil
	case int:
		return strconv.Itoa(v), nil
	case int64:
		return strconv.FormatInt(v, 10), nil
	case uint64:
		return strconv.FormatUint(v, 10), nil
	}
	return "", fmt.Errorf("asyncapi: a document cannot hold a %T", n)
}

// writeYAML writes n, which must be an object, as a YAML 1.2 block mapping
// whose every value reads back as the JSON writeJSON writes: strings that
// could be read as anything else are double-quoted, text of several lines
// is a literal block. A non-empty comment comes first, as "# comment".
func writeYAML(n node, comment string) ([]byte, error) {
	o, ok := n.(*object)
	if !ok {
		return nil, fmt.Errorf("asyncapi: a YAML document is a mapping, not a %T", n)
	}
	var b bytes.Buffer
	if comment != "" {
		b.WriteString("# " + comment + "\n")
	}
	if o.len() == 0 {
		b.WriteString("{}\n")
		return b.Bytes(), nil
	}
	w := yamlWriter{&b}
	if err := w.members(o, 0, false); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

type yamlWriter struct{ b *bytes.Buffer }

// members writes the members of a non-empty mapping at indent. When
// inline is set the first key goes on the current line (after "- ").
func (w yamlWriter) members(o *object, indent int, inline bool) error {
	for i, k := range o.keys {
		if i > 0 || !inline {
			w.b.WriteString(strings.Repeat(" ", indent))
		}
		w.b.WriteString(yamlKey(k))
		w.b.WriteByte(':')
		if err := w.value(o.values[k], indent+2); err != nil {
			return err
		}
	}
	return nil
}

// value writes n after a "key:" or "-" already written: a scalar on the
// same line, a collection on the lines below at indent.
func (w yamlWriter) value(n node, indent int) error {
	switch v := n.(type) {
	case *object:
		if v.len() == 0 {
			w.b.WriteString(" {}\n")
			return nil
		}
		w.b.WriteByte('\n')
		return w.members(v, indent, false)
	case []node:
		if len(v) == 0 {
			w.b.WriteString(" []\n")
			return nil
		}
		w.b.WriteByte('\n')
		return w.items(v, indent, false)
	case string:
		if literalBlockOK(v) {
			w.b.WriteString(" |-\n")
			for _, line := range strings.Split(v, "\n") {
				if line != "" {
					w.b.WriteString(strings.Repeat(" ", indent))
					w.b.WriteString(line)
				}
				w.b.WriteByte('\n')
			}
			return nil
		}
		w.b.WriteString(" " + yamlScalar(v) + "\n")
		return nil
	}
	s, err := scalarText(n)
	if err != nil {
		return err
	}
	w.b.WriteString(" " + s + "\n")
	return nil
}

// items writes the items of a non-empty sequence at indent, each "- "
// followed by the item; a mapping or sequence item starts on the dash's
// line. When inline is set the first dash goes on the current line.
func (w yamlWriter) items(list []node, indent int, inline bool) error {
	for i, item := range list {
		if i > 0 || !inline {
			w.b.WriteString(strings.Repeat(" ", indent))
		}
		w.b.WriteByte('-')
		var err error
		switch v := item.(type) {
		case *object:
			if v.len() == 0 {
				w.b.WriteString(" {}\n")
				continue
			}
			w.b.WriteByte(' ')
			err = w.members(v, indent+2, true)
		case []node:
			if len(v) == 0 {
				w.b.WriteString(" []\n")
				continue
			}
			w.b.WriteByte(' ')
			err = w.items(v, indent+2, true)
		default:
			err = w.value(item, indent+2)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// yamlKey writes a mapping key: plain when that reads back as the same
// string, else double-quoted.
func yamlKey(k string) string { return yamlScalar(k) }

// yamlScalar writes s on one line: plain when it is made only of
// characters that mean nothing to YAML and cannot be read as a number, a
// boolean or null (in YAML 1.1 either: yes, no, on and off are quoted too),
// else double-quoted.
func yamlScalar(s string) string {
	if plainOK(s) {
		return s
	}
	return yamlQuoted(s)
}

// plainOK reports whether s can be written as a plain scalar: it starts
// with an ASCII letter, _, $ or /, goes on with letters, digits and a few
// punctuation characters that are not YAML indicators, does not end with a
// space, and is not a word YAML reads as a boolean or null.
func plainOK(s string) bool {
	if s == "" || strings.HasSuffix(s, " ") {
		return false
	}
	for i, r := range s {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r == '_', r == '$', r == '/':
		case i > 0 && (r >= '0' && r <= '9' || strings.ContainsRune(" .-+(),;='", r)):
		default:
			return false
		}
	}
	switch strings.ToLower(s) {
	case "y", "n", "yes", "no", "on", "off", "true", "false", "null":
		return false
	}
	return true
}

// yamlQuoted writes s as a YAML double-quoted scalar. Every character
// outside YAML's printable set, and the ones YAML 1.1 reads as line breaks,
// is escaped; so are " and \.
func yamlQuoted(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for i, r := range s {
		if r == utf8.RuneError {
			if _, size := utf8.DecodeRuneInString(s[i:]); size == 1 {
				b.WriteString(`\ufffd`)
				continue
			}
		}
		switch r {
		case '"':
			b.WriteString(`\"`)
		case '\\':
			b.WriteString(`\\`)
		case '\n':
			b.WriteString(`\n`)
		case '\t':
			b.WriteString(`\t`)
		default:
			if yamlPrintable(r) {
				b.WriteRune(r)
			} else {
				fmt.Fprintf(&b, `\u%04x`, r)
			}
		}
	}
	b.WriteByte('"')
	return b.String()
}

// yamlPrintable reports whether r may stand as itself in a quoted scalar:
// YAML's printable characters less the ones YAML 1.1 treats as line breaks
// (U+0085, U+2028, U+2029) and the byte order mark.
func yamlPrintable(r rune) bool {
	switch {
	case r == 0x85, r == 0x2028, r == 0x2029, r == 0xFEFF:
		return false
	case r >= 0x20 && r <= 0x7E:
		return true
	case r >= 0xA0 && r <= 0xD7FF, r >= 0xE000 && r <= 0xFFFD, r >= 0x10000 && r <= 0x10FFFF:
		return true
	}
	return false
}

// literalBlockOK reports whether s, text of several lines, can be written
// as a literal block scalar with the strip chomping indicator ("|-") and
// read back unchanged: every character printable (no tab, no carriage
// return), no line that ends with a space, the first line not starting
// with a space, no line of spaces only, and no line break at the end
// (strip chomping removes it).
func literalBlockOK(s string) bool {
	if !strings.Contains(s, "\n") || strings.HasSuffix(s, "\n") || strings.HasPrefix(s, " ") || strings.HasPrefix(s, "\n") {
		return false
	}
	for _, line := range strings.Split(s, "\n") {
		if strings.HasSuffix(line, " ") {
			return false
		}
		for _, r := range line {
			if !yamlPrintable(r) {
				return false
			}
		}
	}
	return utf8.ValidString(s)
}
