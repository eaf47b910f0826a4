package asyncapi

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"
)

// readYAML reads the YAML that writeYAML writes, strictly: block mappings
// and sequences indented by spaces, "{}" and "[]", plain scalars (true,
// false, null and integers read as such), double-quoted scalars and "|-"
// literal blocks, "# " comments on lines of their own before the document.
// Anything else is an error, so that a test notices output it does not
// expect. Numbers are json.Number, as json.Decoder.UseNumber gives them.
func readYAML(data []byte) (any, error) {
	text := string(data)
	if !strings.HasSuffix(text, "\n") {
		return nil, fmt.Errorf("the document does not end with a line break")
	}
	lines := strings.Split(strings.TrimSuffix(text, "\n"), "\n")
	for len(lines) > 0 && strings.HasPrefix(lines[0], "# ") {
		lines = lines[1:]
	}
	r := &yamlReader{lines: lines}
	if len(lines) == 1 && lines[0] == "{}" {
		return map[string]any{}, nil
	}
	v, err := r.block(0)
	if err != nil {
		return nil, err
	}
	if r.i != len(r.lines) {
		return nil, fmt.Errorf("line %d: %q is not part of the document", r.i+1, r.lines[r.i])
	}
	return v, nil
}

type yamlReader struct {
	lines []string
	i     int
}

func indentOf(line string) int { return len(line) - len(strings.TrimLeft(line, " ")) }

// block reads the mapping or sequence that starts on the current line at
// exactly indent.
func (r *yamlReader) block(indent int) (any, error) {
	if r.i >= len(r.lines) {
		return nil, fmt.Errorf("the document ends where a block was expected")
	}
	line := r.lines[r.i]
	if indentOf(line) != indent {
		return nil, fmt.Errorf("line %d: indented %d, want %d", r.i+1, indentOf(line), indent)
	}
	if strings.HasPrefix(line[indent:], "-") {
		return r.sequence(indent, line[indent:])
	}
	return r.mapping(indent, line[indent:])
}

// mapping reads a mapping at indent whose first entry is first.
func (r *yamlReader) mapping(indent int, first string) (any, error) {
	m := map[string]any{}
	entry := first
	for {
		key, rest, err := splitKey(entry)
		if err != nil {
			return nil, fmt.Errorf("line %d: %w", r.i+1, err)
		}
		if _, dup := m[key]; dup {
			return nil, fmt.Errorf("line %d: key %q repeated", r.i+1, key)
		}
		v, err := r.afterIndicator(rest, indent)
		if err != nil {
			return nil, err
		}
		m[key] = v
		if r.i >= len(r.lines) || indentOf(r.lines[r.i]) < indent {
			return m, nil
		}
		line := r.lines[r.i]
		if indentOf(line) != indent || strings.HasPrefix(line[indent:], "-") {
			return nil, fmt.Errorf("line %d: %q does not continue the mapping at indent %d", r.i+1, line, indent)
		}
		entry = line[indent:]
	}
}

// sequence reads a sequence at indent whose first item line is first.
func (r *yamlReader) sequence(indent int, first string) (any, error) {
	var s []any
	item := first
	for {
		if item != "-" && !strings.HasPrefix(item, "- ") {
			return nil, fmt.Errorf("line %d: %q is not a sequence item", r.i+1, item)
		}
		v, err := r.item(strings.TrimPrefix(strings.TrimPrefix(item, "-"), " "), indent+2, item == "-")
		if err != nil {
			return nil, err
		}
		s = append(s, v)
		if r.i >= len(r.lines) || indentOf(r.lines[r.i]) < indent {
			return s, nil
		}
		line := r.lines[r.i]
		if indentOf(line) != indent || !strings.HasPrefix(line[indent:], "-") {
			return nil, fmt.Errorf("line %d: %q does not continue the sequence at indent %d", r.i+1, line, indent)
		}
		item = line[indent:]
	}
}

// item reads a sequence item whose text after "- " is text; its content
// is at indent.
func (r *yamlReader) item(text string, indent int, bare bool) (any, error) {
	switch {
	case bare:
		return nil, fmt.Errorf("line %d: a sequence item with nothing after its dash", r.i+1)
	case strings.HasPrefix(text, "- "):
		return r.sequence(indent, text)
	case text == "|-":
		return r.afterIndicator(" |-", indent-2)
	case text == "{}", text == "[]",
		strings.HasPrefix(text, `"`) && closingQuote(text) == len(text)-1,
		!strings.HasPrefix(text, `"`) && !isMappingEntry(text):
		v, err := scalar(text)
		if err != nil {
			return nil, fmt.Errorf("line %d: %w", r.i+1, err)
		}
		r.i++
		return v, nil
	}
	return r.mapping(indent, text)
}

// isMappingEntry reports whether text starts with a key and ":".
func isMappingEntry(text string) bool {
	_, _, err := splitKey(text)
	return err == nil
}

// afterIndicator reads what follows "key:" (rest, "" or " value") on the
// current line; a nested block is indented 2 more than indent.
func (r *yamlReader) afterIndicator(rest string, indent int) (any, error) {
	switch {
	case rest == "":
		r.i++
		return r.block(indent + 2)
	case rest == " |-":
		r.i++
		var lines []string
		for r.i < len(r.lines) {
			line := r.lines[r.i]
			if line != "" && indentOf(line) < indent+2 {
				break
			}
			if line == "" {
				lines = append(lines, "")
			} else {
				lines = append(lines, line[indent+2:])
			}
			r.i++
		}
		for len(lines) > 0 && lines[len(lines)-1] == "" {
			lines = lines[:len(lines)-1]
		}
		if len(lines) == 0 {
			return nil, fmt.Errorf("line %d: an empty literal block", r.i)
		}
		return strings.Join(lines, "\n"), nil
	case strings.HasPrefix(rest, " "):
		v, err := scalar(rest[1:])
		if err != nil {
			return nil, fmt.Errorf("line %d: %w", r.i+1, err)
		}
		r.i++
		return v, nil
	}
	return nil, fmt.Errorf("line %d: no space after the colon", r.i+1)
}

// splitKey splits "key: ..." or "key:" into the key and what follows the
// colon.
func splitKey(entry string) (string, string, error) {
	if strings.HasPrefix(entry, `"`) {
		end := closingQuote(entry)
		if end < 0 || end+1 >= len(entry) || entry[end+1] != ':' {
			return "", "", fmt.Errorf("a quoted key without a colon after it: %q", entry)
		}
		k, err := unquote(entry[:end+1])
		return k, entry[end+2:], err
	}
	i := strings.IndexByte(entry, ':')
	if i < 0 || (i+1 < len(entry) && entry[i+1] != ' ') {
		return "", "", fmt.Errorf("not a mapping entry: %q", entry)
	}
	k := entry[:i]
	if !plainOK(k) {
		return "", "", fmt.Errorf("the plain key %q should have been quoted", k)
	}
	return k, entry[i+1:], nil
}

// closingQuote returns the index of the quote that closes the
// double-quoted scalar s starts with, or -1.
func closingQuote(s string) int {
	for i := 1; i < len(s); i++ {
		switch s[i] {
		case '\\':
			i++
		case '"':
			return i
		}
	}
	return -1
}

var yamlInteger = regexp.MustCompile(`^-?(0|[1-9][0-9]*)$`)

// scalar reads a scalar written on one line.
func scalar(s string) (any, error) {
	switch {
	case s == "{}":
		return map[string]any{}, nil
	case s == "[]":
		return []any{}, nil
	case strings.HasPrefix(s, `"`):
		if closingQuote(s) != len(s)-1 {
			return nil, fmt.Errorf("text after a quoted scalar: %q", s)
		}
		return unquote(s)
	case s == "true", s == "false":
		return s == "true", nil
	case s == "null":
		return nil, nil
	case yamlInteger.MatchString(s):
		return json.Number(s), nil
	case plainOK(s):
		return s, nil
	}
	return nil, fmt.Errorf("the plain scalar %q should have been quoted", s)
}

// unquote reads a double-quoted scalar with the escapes writeYAML uses.
func unquote(s string) (string, error) {
	var b strings.Builder
	body := s[1 : len(s)-1]
	for i := 0; i < len(body); i++ {
		c := body[i]
		if c != '\\' {
			if c == '"' {
				return "", fmt.Errorf("an unescaped quote in %q", s)
			}
			b.WriteByte(c)
			continue
		}
		i++
		if i >= len(body) {
			return "", fmt.Errorf("a lone backslash in %q", s)
		}
		switch body[i] {
		case '"', '\\':
			b.WriteByte(body[i])
		case 'n':
			b.WriteByte('\n')
		case 't':
			b.WriteByte('\t')
		case 'u':
			if i+4 >= len(body) {
				return "", fmt.Errorf("a short \\u escape in %q", s)
			}
			n, err := strconv.ParseUint(body[i+1:i+5], 16, 32)
			if err != nil {
				return "", fmt.Errorf("a bad \\u escape in %q", s)
			}
			b.WriteRune(rune(n))
			i += 4
		default:
			return "", fmt.Errorf("an escape writeYAML does not write in %q", s)
		}
	}
	return b.String(), nil
}

// readJSON reads JSON with numbers as json.Number.
func readJSON(data []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	if dec.More() {
		return nil, fmt.Errorf("more than one JSON value")
	}
	return v, nil
}

// trickyStrings are strings YAML could read as something else, or that
// need escapes.
var trickyStrings = []string{
	"", " ", "plain", "Job", "x-retry-count", "$ref", "#/components/schemas/Job",
	"true", "False", "YES", "no", "On", "off", "y", "N", "null", "Null", "~",
	"0", "12", "-3", "3.0.0", "0x1F", "1e3", ".5", "1_000", "2026-01-02", "12:30",
	"-", "- a", "a: b", "a:b", "a #b", "#x", "&anchor", "*alias", "!tag", "%x", "@x", "`x",
	"[a]", "{a}", "a, b", "?", "?x", "|", ">", "'single'", `"double"`, `back\slash`,
	" lead", "trail ", "tab\there", "multi\nline", "multi\n\nline", "ends\n", "\nstarts",
	"two\n  indented", "line \nspace", "  \nx", "café", "日本", "\u0085", "\u2028", "\u2029", "\ufeff",
	"\x7f", "\x00", "\x1b[0m", "\r\n", "bad\xffutf8", "\xc3", "😀", "a\n---\nb", "a\n...\nb", "a\n# no\nb",
}

func TestYAMLScalarsReadBack(t *testing.T) {
	for _, s := range trickyStrings {
		o := newObject().set(s, s).set("list", []node{s, newObject().set(s, s)})
		y, err := writeYAML(o, "a comment")
		if err != nil {
			t.Fatal(err)
		}
		got, err := readYAML(y)
		if err != nil {
			t.Errorf("%q: %v\n%s", s, err, y)
			continue
		}
		want := string([]rune(s)) // bytes that are not UTF-8 become U+FFFD
		wantTree := map[string]any{want: want, "list": []any{want, map[string]any{want: want}}}
		if !reflect.DeepEqual(got, wantTree) {
			t.Errorf("%q: read back %#v\n%s", s, got, y)
		}
		j, err := writeJSON(o)
		if err != nil {
			t.Fatal(err)
		}
		fromJSON, err := readJSON(j)
		if err != nil {
			t.Fatalf("%q: %v\n%s", s, err, j)
		}
		if !reflect.DeepEqual(fromJSON, wantTree) {
			t.Errorf("%q: JSON read back %#v\n%s", s, fromJSON, j)
		}
	}
}

func FuzzYAMLScalar(f *testing.F) {
	for _, s := range trickyStrings {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		y, err := writeYAML(newObject().set("k", s).set(s, []node{s}), "")
		if err != nil {
			t.Fatal(err)
		}
		got, err := readYAML(y)
		if err != nil {
			t.Fatalf("%q: %v\n%s", s, err, y)
		}
		want := string([]rune(s))
		if !reflect.DeepEqual(got, map[string]any{"k": want, want: []any{want}}) {
			t.Fatalf("%q: read back %#v\n%s", s, got, y)
		}
	})
}

// TestYAMLScalarForms pins how strings are written: plain only when
// nothing in them means something to YAML.
func TestYAMLScalarForms(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"Job", "Job"},
		{"x-streamgen-max-attempts", "x-streamgen-max-attempts"},
		{"$ref", "$ref"},
		{"application/json", "application/json"},
		{"Work handles Job from jobs.", "Work handles Job from jobs."},
		{"", `""`},
		{"true", `"true"`},
		{"yes", `"yes"`},
		{"Off", `"Off"`},
		{"null", `"null"`},
		{"3.0.0", `"3.0.0"`},
		{"10s", `"10s"`},
		{"-", `"-"`},
		{"a: b", `"a: b"`},
		{"#/servers/zeromq", `"#/servers/zeromq"`},
		{"trail ", `"trail "`},
		{`say "hi"`, `"say \"hi\""`},
		{"tab\tand\nline", `"tab\tand\nline"`},
		{"\u2028", `"\u2028"`},
		{"\x7f", `"\u007f"`},
		{"\xff", `"\ufffd"`},
		{"café", `"café"`},
	} {
		if got := yamlScalar(tc.in); got != tc.want {
			t.Errorf("yamlScalar(%q) = %s, want %s", tc.in, got, tc.want)
		}
	}
	for _, tc := range []struct {
		in string
		ok bool
	}{
		{"two\nlines", true},
		{"a\n\nparagraph", true},
		{"ends\n", false},
		{"\nstarts", false},
		{" lead\nx", false},
		{"x\n lead", true},
		{"space \nx", false},
		{"tab\t\nx", false},
		{"one line", false},
		{"bad\xff\nx", false},
	} {
		if got := literalBlockOK(tc.in); got != tc.ok {
			t.Errorf("literalBlockOK(%q) = %v, want %v", tc.in, got, tc.ok)
		}
	}
}

func TestWriteYAMLAndJSONShapes(t *testing.T) {
	o := newObject().
		set("a", 1).
		set("b", newObject()).
		set("c", []node{}).
		set("d", []node{[]node{"x", "y"}, newObject().set("k", "v").set("l", []node{true, nil}), "text\nof two lines"}).
		set("e", newObject().set("f", int64(-2)).set("g", uint64(1<<64-1)).set("h", false))
	y, err := writeYAML(o, "")
	if err != nil {
		t.Fatal(err)
	}
	wantYAML := `a: 1
b: {}
c: []
d:
  - - x
    - "y"
  - k: v
    l:
      - true
      - null
  - |-
    text
    of two lines
e:
  f: -2
  g: 18446744073709551615
  h: false
`
	if string(y) != wantYAML {
		t.Errorf("YAML:\n%s\nwant:\n%s", y, wantYAML)
	}
	j, err := writeJSON(o)
	if err != nil {
		t.Fatal(err)
	}
	fromYAML, err := readYAML(y)
	if err != nil {
		t.Fatal(err)
	}
	fromJSON, err := readJSON(j)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(fromYAML, fromJSON) {
		t.Errorf("YAML and JSON differ:\n%#v\n%#v", fromYAML, fromJSON)
	}
	if !strings.Contains(string(j), `"g": 18446744073709551615`) || !strings.Contains(string(j), `"b": {}`) {
		t.Errorf("JSON:\n%s", j)
	}
	if _, err := writeYAML([]node{}, ""); err == nil {
		t.Error("writeYAML took a sequence as the document")
	}
	if _, err := writeJSON(newObject().set("x", 1.5)); err == nil {
		t.Error("writeJSON took a float, which documents do not hold")
	}
	if !utf8.Valid(y) || !utf8.Valid(j) {
		t.Error("output is not UTF-8")
	}
}

func TestObjectKeepsOrder(t *testing.T) {
	o := newObject().set("z", 1).set("a", 2).set("z", 3).setNonEmpty("empty", "").setNonEmpty("m", "x")
	if got := strings.Join(o.keys, ","); got != "z,a,m" {
		t.Errorf("keys %s, want z,a,m", got)
	}
	if v := o.values["z"]; v != 3 {
		t.Errorf("z = %v, want 3 (set again in place)", v)
	}
}
