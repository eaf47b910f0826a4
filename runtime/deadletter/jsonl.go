package deadletter

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/streamgen/streamgen/runtime/internal/headers"
)

// record is a letter as one line of JSON Lines.
type record struct {
	Body         json.RawMessage            `json:"body"`
	BodyEncoding string                     `json:"body_encoding"` // "text" or "base64"
	Headers      map[string]json.RawMessage `json:"headers,omitempty"`
	Properties   Properties                 `json:"properties"`
	// The explanation, for whoever reads the line; Import reads it from
	// the headers again.
	Reason   string    `json:"reason,omitempty"`
	Source   string    `json:"source,omitempty"`
	Attempts int       `json:"attempts,omitempty"`
	Poison   bool      `json:"poison,omitempty"`
	ParkedAt time.Time `json:"parked_at,omitzero"`
	ByBroker bool      `json:"by_broker,omitempty"`
}

// MarshalJSON encodes l as one JSON object: its body as text when it is
// valid UTF-8 ("body_encoding": "text"), else in base64 ("base64"), its
// headers (a string or bool as itself, any other AMQP value as an object
// that names its type, so that it reads back as it was), its properties
// and its explanation.
func (l *Letter) MarshalJSON() ([]byte, error) {
	r := record{Properties: l.Properties, Reason: l.Reason, Source: l.Source, Attempts: l.Attempts,
		Poison: l.Poison, ParkedAt: l.ParkedAt, ByBroker: l.ByBroker}
	var body string
	if utf8.Valid(l.Body) {
		body, r.BodyEncoding = string(l.Body), "text"
	} else {
		body, r.BodyEncoding = base64.StdEncoding.EncodeToString(l.Body), "base64"
	}
	var err error
	if r.Body, err = marshalNoEscape(body); err != nil {
		return nil, fmt.Errorf("deadletter: body: %w", err)
	}
	if len(l.Headers) > 0 {
		r.Headers = make(map[string]json.RawMessage, len(l.Headers))
		for k, v := range l.Headers {
			b, err := json.Marshal(encodeValue(v))
			if err != nil {
				return nil, fmt.Errorf("deadletter: header %s: %w", k, err)
			}
			r.Headers[k] = b
		}
	}
	return json.Marshal(r)
}

// UnmarshalJSON decodes what MarshalJSON wrote. It refuses what would not
// read back as the letter written: a line that is not an object with a
// body (null, {}), and one with bytes that are not valid UTF-8 or an
// escape of half a surrogate pair, in its body, a header or anywhere
// else, which JSON decoding would turn into U+FFFD (Export writes such a
// body in base64, and such a header string as a typed value in base64).
// The explanation is read from the headers, as the store read it; a
// letter the broker parked itself, whose explanation came from the
// broker's own record, keeps the one the line gives.
func (l *Letter) UnmarshalJSON(b []byte) error {
	var r record
	if err := json.Unmarshal(b, &r); err != nil {
		return fmt.Errorf("deadletter: %w", err)
	}
	if r.Body == nil || string(r.Body) == "null" {
		return errors.New("deadletter: not a letter: a letter has a body (and a body_encoding, text or base64; text when left out)")
	}
	var body string
	if err := json.Unmarshal(r.Body, &body); err != nil {
		return fmt.Errorf("deadletter: body: %w", err)
	}
	switch r.BodyEncoding {
	case "text", "":
		if err := exactText(r.Body); err != nil {
			return fmt.Errorf("deadletter: body: a text body %w: write it in base64 (body_encoding base64), as export does", err)
		}
		l.Body = []byte(body)
	case "base64":
		b, err := base64.StdEncoding.DecodeString(body)
		if err != nil {
			return fmt.Errorf("deadletter: body: %w", err)
		}
		l.Body = b
	default:
		return fmt.Errorf("deadletter: body_encoding %q: want text or base64", r.BodyEncoding)
	}
	l.Properties = r.Properties
	l.Headers = make(map[string]any, len(r.Headers))
	for k, raw := range r.Headers {
		if err := exactText(raw); err != nil {
			return fmt.Errorf("deadletter: header %s: a value %w: write such a string as {\"type\": \"string\", \"encoding\": \"base64\", \"value\": ...}, as export does", k, err)
		}
		v, err := decodeValue(raw)
		if err != nil {
			return fmt.Errorf("deadletter: header %s: %w", k, err)
		}
		l.Headers[k] = v
	}
	if err := exactText(b); err != nil { // in a property, a header's name, the explanation
		return fmt.Errorf("deadletter: text %w, in a property, a header's name or the explanation: JSON decoding would change it", err)
	}
	l.Reason, l.Source, l.Attempts, l.Poison, l.ParkedAt, l.ByBroker, l.Explained = "", "", 0, false, time.Time{}, false, false
	if h, ok := streamgenExplanation(l.Headers); ok {
		l.Explain(h, false)
	} else if r.ByBroker || r.Reason != "" {
		l.Reason, l.Source, l.Attempts, l.Poison, l.ParkedAt, l.ByBroker = r.Reason, r.Source, r.Attempts, r.Poison, r.ParkedAt, r.ByBroker
		l.Explained = true
	}
	return nil
}

// exactText fails when JSON decoding would read raw as other text than
// it holds: raw holds bytes that are not UTF-8, or an escape of half a
// surrogate pair (\ud800 to \udfff, not a high half followed by a low
// one), each of which decoding turns into U+FFFD. The error completes "a
// value ..." or "text ...".
func exactText(raw []byte) error {
	if !utf8.Valid(raw) {
		return errors.New("that is not valid UTF-8")
	}
	for i := 0; i < len(raw); i++ {
		if raw[i] != '\\' || i+1 >= len(raw) {
			continue
		}
		if raw[i+1] != 'u' {
			i++ // an escape of one character: \\, \", \n...
			continue
		}
		r, ok := escapedRune(raw[i:])
		switch {
		case !ok || !utf16.IsSurrogate(r):
		case r < 0xdc00: // a high half: a low one must follow
			if low, ok := escapedRune(raw[i+6:]); ok && 0xdc00 <= low && low < 0xe000 {
				i += 6
				break
			}
			fallthrough
		default:
			return errors.New("with an escape of half a surrogate pair, which is no character")
		}
		i += 5
	}
	return nil
}

// escapedRune reads the \uXXXX escape b starts with.
func escapedRune(b []byte) (rune, bool) {
	if len(b) < 6 || b[0] != '\\' || b[1] != 'u' {
		return 0, false
	}
	n, err := strconv.ParseUint(string(b[2:6]), 16, 16)
	return rune(n), err == nil
}

// marshalNoEscape encodes s as a JSON string without escaping <, > and &.
func marshalNoEscape(s string) (json.RawMessage, error) {
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(s); err != nil {
		return nil, err
	}
	return json.RawMessage(strings.TrimSuffix(b.String(), "\n")), nil
}

// typed is an AMQP value that is neither a string nor a bool, in JSON.
type typed struct {
	Type  string `json:"type"`
	Value any    `json:"value"`
	Scale *uint8 `json:"scale,omitempty"`
	// Encoding is "base64" for a string that is not valid UTF-8, which
	// JSON cannot hold as it is.
	Encoding string `json:"encoding,omitempty"`
}

func encodeValue(v any) any {
	switch x := v.(type) {
	case string:
		if !utf8.ValidString(x) {
			return typed{Type: "string", Value: base64.StdEncoding.EncodeToString([]byte(x)), Encoding: "base64"}
		}
		return x
	case nil, bool:
		return x
	case int8:
		return typed{Type: "int8", Value: x}
	case int16:
		return typed{Type: "int16", Value: x}
	case int32:
		return typed{Type: "int32", Value: x}
	case int64:
		return typed{Type: "int64", Value: x}
	case int:
		return typed{Type: "int64", Value: x}
	case uint8:
		return typed{Type: "uint8", Value: x}
	case uint16:
		return typed{Type: "uint16", Value: x}
	case uint32:
		return typed{Type: "uint32", Value: x}
	case float32:
		return typed{Type: "float32", Value: x}
	case float64:
		return typed{Type: "float64", Value: x}
	case time.Time:
		return typed{Type: "timestamp", Value: x.UTC().Format(time.RFC3339)}
	case []byte:
		return typed{Type: "bytes", Value: base64.StdEncoding.EncodeToString(x)}
	case Decimal:
		return typed{Type: "decimal", Value: x.Value, Scale: &x.Scale}
	case map[string]any:
		return typed{Type: "table", Value: encodeTable(x)}
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = encodeValue(e)
		}
		return out
	}
	return typed{Type: "string", Value: fmt.Sprint(v)}
}

func encodeTable(t map[string]any) map[string]any {
	out := make(map[string]any, len(t))
	for k, v := range t {
		out[k] = encodeValue(v)
	}
	return out
}

func decodeValue(raw json.RawMessage) (any, error) {
	var v any
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	return decodeAny(v)
}

func decodeAny(v any) (any, error) {
	switch x := v.(type) {
	case nil, string, bool:
		return x, nil
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			d, err := decodeAny(e)
			if err != nil {
				return nil, err
			}
			out[i] = d
		}
		return out, nil
	case map[string]any:
		typ, _ := x["type"].(string)
		encoding, _ := x["encoding"].(string)
		return decodeTyped(typ, x["value"], x["scale"], encoding)
	}
	return nil, fmt.Errorf("a bare %T: numbers and objects are written as {\"type\": ..., \"value\": ...}", v)
}

func decodeTyped(typ string, value, scale any, encoding string) (any, error) {
	num := func(lo, hi float64) (int64, error) {
		n, ok := value.(json.Number)
		if !ok {
			return 0, fmt.Errorf("%s value %v is not a number", typ, value)
		}
		i, err := n.Int64()
		if err != nil || float64(i) < lo || float64(i) > hi {
			return 0, fmt.Errorf("%s value %v out of range", typ, value)
		}
		return i, nil
	}
	switch typ {
	case "int8":
		i, err := num(math.MinInt8, math.MaxInt8)
		return int8(i), err
	case "int16":
		i, err := num(math.MinInt16, math.MaxInt16)
		return int16(i), err
	case "int32":
		i, err := num(math.MinInt32, math.MaxInt32)
		return int32(i), err
	case "int64":
		return num(math.MinInt64, math.MaxInt64)
	case "uint8":
		i, err := num(0, math.MaxUint8)
		return uint8(i), err
	case "uint16":
		i, err := num(0, math.MaxUint16)
		return uint16(i), err
	case "uint32":
		i, err := num(0, math.MaxUint32)
		return uint32(i), err
	case "float32", "float64":
		n, ok := value.(json.Number)
		if !ok {
			return nil, fmt.Errorf("%s value %v is not a number", typ, value)
		}
		f, err := n.Float64()
		if typ == "float32" {
			return float32(f), err
		}
		return f, err
	case "timestamp":
		s, _ := value.(string)
		return time.Parse(time.RFC3339, s)
	case "bytes":
		s, _ := value.(string)
		return base64.StdEncoding.DecodeString(s)
	case "decimal":
		v, err := num(math.MinInt32, math.MaxInt32)
		s, _ := scale.(json.Number)
		sc, _ := s.Int64()
		return Decimal{Scale: uint8(sc), Value: int32(v)}, err
	case "string":
		s, _ := value.(string)
		switch encoding {
		case "":
			return s, nil
		case "base64":
			b, err := base64.StdEncoding.DecodeString(s)
			return string(b), err
		}
		return nil, fmt.Errorf("string encoding %q: want base64, or none", encoding)
	case "table":
		m, ok := value.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("table value %v is not an object", value)
		}
		out := map[string]any{}
		for k, e := range m {
			d, err := decodeAny(e)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", k, err)
			}
			out[k] = d
		}
		return out, nil
	}
	return nil, fmt.Errorf("unknown value type %q", typ)
}

// ReadLetters calls fn with each letter of r, JSON Lines as Export writes
// them; blank lines are skipped. An error in the input names its line; an
// error from fn stops the reading and is returned as it is.
func ReadLetters(r io.Reader, fn func(*Letter) error) error {
	err := readLetters(r, fn)
	var le *lineError
	if errors.As(err, &le) {
		return fmt.Errorf("deadletter: %w", err)
	}
	return err
}

// lineError is a line of JSON Lines that is not a letter.
type lineError struct {
	line int
	err  error
}

func (e *lineError) Error() string { return fmt.Sprintf("line %d: %v", e.line, e.err) }
func (e *lineError) Unwrap() error { return e.err }

func readLetters(r io.Reader, fn func(*Letter) error) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 512<<20)
	line := 0
	for sc.Scan() {
		line++
		if len(bytes.TrimSpace(sc.Bytes())) == 0 {
			continue
		}
		var l Letter
		if err := l.UnmarshalJSON(sc.Bytes()); err != nil {
			return &lineError{line, errors.New(strings.TrimPrefix(err.Error(), "deadletter: "))}
		}
		if err := fn(&l); err != nil {
			return err
		}
	}
	if err := sc.Err(); err != nil {
		return &lineError{line + 1, err}
	}
	return nil
}

// Names of the headers of l, sorted: for a stable display.
func headerNames(h map[string]any) []string {
	names := make([]string, 0, len(h))
	for k := range h {
		names = append(names, k)
	}
	sort.Strings(names)
	return names
}

// HeaderText is a header value as one line of text: a scalar as
// headers.Text writes it (a string as it is), nil as "", and a table,
// array or decimal as the JSON MarshalJSON writes for it. A store whose
// headers are text (ZeroMQ's) writes a letter's headers with it.
func HeaderText(v any) string {
	if s, ok := headers.Text(v); ok {
		return s
	}
	if v == nil {
		return ""
	}
	b, _ := json.Marshal(encodeValue(v))
	return string(b)
}
