package jsondecode

import (
	"encoding/json"
	"math"
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
	"unsafe"
)

// maxDepth is encoding/json's nesting limit: arrays and objects nested more
// deeply than this are a syntax error.
const maxDepth = 10000

// Decoder reads one JSON document for a generated decoder. A failed Decoder
// stays failed; every method is then a no-op returning false or zero.
type Decoder struct {
	data     []byte
	pos      int // next unread byte
	depth    int // arrays and objects open, as encoding/json's scanner counts them
	keyStart int // the current member's key is data[keyStart:keyEnd]
	keyEnd   int
	failed   bool
}

// Start returns a Decoder for body. It fails unless the first byte other
// than JSON whitespace is '{', which it leaves for Object to read (so a body
// that is null fails). Built with GOEXPERIMENT=jsonv2 it always fails, since
// encoding/json then follows rules the Decoder does not.
func Start(body []byte) Decoder {
	d := Decoder{data: body}
	if !fastPath || d.next() != '{' {
		d.failed = true
	}
	return d
}

// End reports whether the document was read without failing, every array
// and object is closed, and only JSON whitespace remains.
func (d *Decoder) End() bool {
	if d.failed {
		return false
	}
	if d.depth != 0 || d.next() != 0 || d.pos != len(d.data) {
		d.failed = true
		return false
	}
	return true
}

// next skips JSON whitespace and returns the byte there, or 0 at the end of
// the data (0 starts no JSON token, so it fails wherever a token is needed).
func (d *Decoder) next() byte {
	i, data := d.pos, d.data
	for i < len(data) {
		c := data[i]
		if c > ' ' || (c != ' ' && c != '\t' && c != '\n' && c != '\r') {
			d.pos = i
			return c
		}
		i++
	}
	d.pos = i
	return 0
}

// push enters an array or object whose opening byte was just consumed.
func (d *Decoder) push() bool {
	d.depth++
	if d.depth > maxDepth {
		d.failed = true
		return false
	}
	return true
}

// literal consumes lit (true, false or null) at d.pos; it fails unless the
// byte after it, if any, ends a value.
func (d *Decoder) literal(lit string) bool {
	end := d.pos + len(lit)
	if end > len(d.data) || string(d.data[d.pos:end]) != lit || !endsValue(d.data, end) {
		d.failed = true
		return false
	}
	d.pos = end
	return true
}

// endsValue reports whether data[i] may follow a number or a literal: the
// end of the data, JSON whitespace, ',', ']' or '}'.
func endsValue(data []byte, i int) bool {
	if i >= len(data) {
		return true
	}
	switch data[i] {
	case ' ', '\t', '\n', '\r', ',', ']', '}':
		return true
	}
	return false
}

// Object reads the start of an object into a struct. On null it consumes
// the null and returns false (null leaves a struct as it is); on '{' it
// returns true, and the members follow through Member. Anything else fails.
func (d *Decoder) Object() bool {
	if d.failed {
		return false
	}
	switch d.next() {
	case '{':
		d.pos++
		return d.push()
	case 'n':
		d.literal("null")
		return false
	}
	d.failed = true
	return false
}

// item moves to the i-th item (counting from 0) of the open object or
// array that end closes, past the ',' before it, and returns its first
// byte (0 at the end of the body); at end it leaves the object or array and
// returns false, as it does when the ',' is missing.
func (d *Decoder) item(i int, end byte) (byte, bool) {
	c := d.next()
	if c == end {
		d.pos++
		d.depth--
		return 0, false
	}
	if i > 0 {
		if c != ',' {
			d.failed = true
			return 0, false
		}
		d.pos++
		c = d.next()
	}
	return c, true
}

// Member reads up to the value of the i-th member (counting from 0) of the
// object just opened by Object, and returns true with its key in Key; at the
// closing '}' it returns false. A key must be a string without escape
// sequences.
func (d *Decoder) Member(i int) bool {
	if d.failed {
		return false
	}
	c, more := d.item(i, '}')
	if !more {
		return false
	}
	if c != '"' {
		d.failed = true
		return false
	}
	data := d.data
	start := d.pos + 1
	j := start
	for {
		if j >= len(data) {
			d.failed = true
			return false
		}
		b := data[j]
		if b == '"' {
			break
		}
		if b == '\\' || b < 0x20 {
			d.failed = true
			return false
		}
		j++
	}
	d.keyStart, d.keyEnd = start, j
	d.pos = j + 1
	if d.next() != ':' {
		d.failed = true
		return false
	}
	d.pos++
	return true
}

// Key returns the current member's key, without its quotes. It may hold
// bytes beyond ASCII as they are in the body (not necessarily valid UTF-8):
// a key equal to one of a struct's JSON names, which are valid UTF-8, is
// that name exactly as encoding/json reads it.
func (d *Decoder) Key() []byte {
	if d.failed {
		return nil
	}
	return d.data[d.keyStart:d.keyEnd]
}

// Seen fails if *seen is already true, and sets it otherwise. The generated
// code calls it once per member with a flag per field, so that a repeated
// key fails (encoding/json merges the second value into the first).
func (d *Decoder) Seen(seen *bool) {
	if d.failed {
		return
	}
	if *seen {
		d.failed = true
	}
	*seen = true
}

// Unknown skips the value of a member whose key is none of names, the
// struct's JSON names, exactly. It fails if the key has a byte beyond ASCII,
// or if it matches one of names case-insensitively (encoding/json would
// decode it into that field); otherwise it skips the value as skip does.
func (d *Decoder) Unknown(names ...string) {
	if d.failed {
		return
	}
	key := d.data[d.keyStart:d.keyEnd]
	for _, c := range key {
		if c >= utf8.RuneSelf {
			d.failed = true
			return
		}
	}
	// encoding/json matches by foldName, which for an ASCII key agrees
	// with Unicode simple folding: strings.EqualFold.
	k := unsafe.String(unsafe.SliceData(key), len(key))
	for _, name := range names {
		if strings.EqualFold(k, name) {
			d.failed = true
			return
		}
	}
	d.skipValue()
}

// Null consumes a null and returns true; on anything else it consumes
// nothing and returns false.
func (d *Decoder) Null() bool {
	if d.failed || d.next() != 'n' {
		return false
	}
	return d.literal("null")
}

// Element reads up to the i-th element (counting from 0) of an array, and
// returns true when there is one for the caller to decode; at the closing
// ']' it returns false. Element(0) reads the opening '[' and fails on
// anything else (a null is the caller's to handle first, with Null).
func (d *Decoder) Element(i int) bool {
	if d.failed {
		return false
	}
	if i == 0 {
		if d.next() != '[' {
			d.failed = true
			return false
		}
		d.pos++
		if !d.push() {
			return false
		}
	}
	c, more := d.item(i, ']')
	if !more {
		return false
	}
	if c == ',' || c == ']' || c == 0 {
		d.failed = true
		return false
	}
	return true
}

// Bool reads true or false into *p; null leaves *p as it is.
func (d *Decoder) Bool(p *bool) {
	if d.failed {
		return
	}
	switch d.next() {
	case 't':
		if d.literal("true") {
			*p = true
		}
	case 'f':
		if d.literal("false") {
			*p = false
		}
	case 'n':
		d.literal("null")
	default:
		d.failed = true
	}
}

// String reads a string into *p; null leaves *p as it is. A string that is
// not valid UTF-8 fails; escape sequences are unquoted as encoding/json
// unquotes them.
func (d *Decoder) String(p *string) {
	if d.failed {
		return
	}
	switch d.next() {
	case '"':
	case 'n':
		d.literal("null")
		return
	default:
		d.failed = true
		return
	}
	start := d.pos
	end, flags := scanString(d.data, start)
	if end < 0 {
		d.failed = true
		return
	}
	d.pos = end
	content := d.data[start+1 : end-1]
	if flags&nonASCII != 0 && !utf8.Valid(content) {
		d.failed = true
		return
	}
	if flags&escaped == 0 {
		*p = string(content)
		return
	}
	*p = unescape(content)
}

// unescape returns the text of the content of a valid JSON string that has
// escape sequences and is valid UTF-8, as encoding/json unquotes it: a \u
// escape of a surrogate half makes a rune with the \u escape after it when
// the two are a pair, and is U+FFFD otherwise.
func unescape(content []byte) string {
	buf := make([]byte, 0, len(content))
	for i := 0; i < len(content); {
		c := content[i]
		if c != '\\' {
			buf = append(buf, c)
			i++
			continue
		}
		switch e := content[i+1]; e {
		case 'u':
			r := hex4(content[i+2 : i+6])
			i += 6
			if utf16.IsSurrogate(r) {
				if i+6 <= len(content) && content[i] == '\\' && content[i+1] == 'u' {
					if pair := utf16.DecodeRune(r, hex4(content[i+2:i+6])); pair != utf8.RuneError {
						buf = utf8.AppendRune(buf, pair)
						i += 6
						continue
					}
				}
				r = utf8.RuneError
			}
			buf = utf8.AppendRune(buf, r)
			continue
		case 'b':
			buf = append(buf, '\b')
		case 'f':
			buf = append(buf, '\f')
		case 'n':
			buf = append(buf, '\n')
		case 'r':
			buf = append(buf, '\r')
		case 't':
			buf = append(buf, '\t')
		default: // '"', '\\', '/'
			buf = append(buf, e)
		}
		i += 2
	}
	if len(buf) == 0 {
		return ""
	}
	// buf is this function's own and never written again.
	return unsafe.String(&buf[0], len(buf))
}

// hex4 returns the value of four hex digits, which scanString checked.
func hex4(h []byte) rune {
	var r rune
	for _, c := range h[:4] {
		switch {
		case c <= '9':
			c -= '0'
		case c >= 'a':
			c -= 'a' - 10
		default:
			c -= 'A' - 10
		}
		r = r<<4 | rune(c)
	}
	return r
}

// Flags from scanString.
const (
	escaped  = 1 << iota // the string has an escape sequence
	nonASCII             // the string has a byte beyond ASCII
)

// scanString checks the string starting with the '"' at data[i] as
// encoding/json's scanner does (any byte from 0x20 up but '"' and '\\' as it
// is, including bytes that are not UTF-8; the escapes \" \\ \/ \b \f \n \r \t
// and \u with four hex digits), and returns the index just past its closing
// quote, or -1 if it is not a valid string.
func scanString(data []byte, i int) (end int, flags int) {
	i++
	for i < len(data) {
		c := data[i]
		if c >= 0x20 && c < utf8.RuneSelf && c != '"' && c != '\\' {
			i++
			continue
		}
		switch {
		case c == '"':
			return i + 1, flags
		case c == '\\':
			flags |= escaped
			if i+1 >= len(data) {
				return -1, 0
			}
			switch data[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i += 2
			case 'u':
				if i+6 > len(data) || !isHex(data[i+2]) || !isHex(data[i+3]) || !isHex(data[i+4]) || !isHex(data[i+5]) {
					return -1, 0
				}
				i += 6
			default:
				return -1, 0
			}
		case c < 0x20:
			return -1, 0
		default:
			flags |= nonASCII
			i++
		}
	}
	return -1, 0
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

// scanNumber checks the number starting at data[i] against JSON's grammar,
// -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?, followed by a byte that
// ends a value, and returns the index just past it (or -1 if it is not a
// valid number) and whether it has neither fraction nor exponent.
func scanNumber(data []byte, i int) (end int, integer bool) {
	if i < len(data) && data[i] == '-' {
		i++
	}
	switch {
	case i >= len(data):
		return -1, false
	case data[i] == '0':
		i++
	case '1' <= data[i] && data[i] <= '9':
		i++
		for i < len(data) && isDigit(data[i]) {
			i++
		}
	default:
		return -1, false
	}
	integer = true
	if i < len(data) && data[i] == '.' {
		integer = false
		i++
		if i >= len(data) || !isDigit(data[i]) {
			return -1, false
		}
		for i < len(data) && isDigit(data[i]) {
			i++
		}
	}
	if i < len(data) && (data[i] == 'e' || data[i] == 'E') {
		integer = false
		i++
		if i < len(data) && (data[i] == '+' || data[i] == '-') {
			i++
		}
		if i >= len(data) || !isDigit(data[i]) {
			return -1, false
		}
		for i < len(data) && isDigit(data[i]) {
			i++
		}
	}
	if !endsValue(data, i) {
		return -1, false
	}
	return i, integer
}

// integer reads a number that strconv.ParseInt or ParseUint may accept: its
// sign and magnitude. ok is false on null (the Decoder has not failed then)
// and on failure; either way the caller leaves its value as it is.
func (d *Decoder) integer() (neg bool, mag uint64, ok bool) {
	if d.failed {
		return false, 0, false
	}
	var i int
	switch c := d.next(); {
	case c == 'n':
		d.literal("null")
		return false, 0, false
	case c == '-':
		neg = true
		i = d.pos + 1
	case isDigit(c):
		i = d.pos
	default:
		d.failed = true
		return false, 0, false
	}
	data := d.data
	if i >= len(data) || !isDigit(data[i]) {
		d.failed = true
		return false, 0, false
	}
	if data[i] == '0' {
		i++
	} else {
		for i < len(data) && isDigit(data[i]) {
			digit := uint64(data[i] - '0')
			if mag > (math.MaxUint64-digit)/10 {
				// Beyond every integer type's range (or, with a
				// fraction or exponent to come, not an integer).
				d.failed = true
				return false, 0, false
			}
			mag = mag*10 + digit
			i++
		}
	}
	// A fraction or an exponent, or a digit after a leading 0: either not
	// JSON or not something ParseInt accepts.
	if !endsValue(data, i) {
		d.failed = true
		return false, 0, false
	}
	d.pos = i
	return neg, mag, true
}

// signed reads an integer within [lo, hi] (ParseInt(s, 10, 64), then the
// range of the destination type, as encoding/json checks them).
func (d *Decoder) signed(lo, hi int64) (int64, bool) {
	neg, mag, ok := d.integer()
	if !ok {
		return 0, false
	}
	if neg {
		if mag > uint64(-(lo+1))+1 {
			d.failed = true
			return 0, false
		}
		return int64(-mag), true
	}
	if mag > uint64(hi) {
		d.failed = true
		return 0, false
	}
	return int64(mag), true
}

// unsigned reads an integer within [0, hi]. A minus sign fails, even on 0,
// as it does in strconv.ParseUint.
func (d *Decoder) unsigned(hi uint64) (uint64, bool) {
	neg, mag, ok := d.integer()
	if !ok {
		return 0, false
	}
	if neg || mag > hi {
		d.failed = true
		return 0, false
	}
	return mag, true
}

// Int reads an integer into *p; null leaves *p as it is. A fraction, an
// exponent, a quoted number or a value out of range fails.
func (d *Decoder) Int(p *int) {
	if v, ok := d.signed(math.MinInt, math.MaxInt); ok {
		*p = int(v)
	}
}

// Int8 is Int for int8.
func (d *Decoder) Int8(p *int8) {
	if v, ok := d.signed(math.MinInt8, math.MaxInt8); ok {
		*p = int8(v)
	}
}

// Int16 is Int for int16.
func (d *Decoder) Int16(p *int16) {
	if v, ok := d.signed(math.MinInt16, math.MaxInt16); ok {
		*p = int16(v)
	}
}

// Int32 is Int for int32.
func (d *Decoder) Int32(p *int32) {
	if v, ok := d.signed(math.MinInt32, math.MaxInt32); ok {
		*p = int32(v)
	}
}

// Int64 is Int for int64.
func (d *Decoder) Int64(p *int64) {
	if v, ok := d.signed(math.MinInt64, math.MaxInt64); ok {
		*p = v
	}
}

// Uint reads an unsigned integer into *p; null leaves *p as it is. A minus
// sign, a fraction, an exponent, a quoted number or a value out of range
// fails.
func (d *Decoder) Uint(p *uint) {
	if v, ok := d.unsigned(math.MaxUint); ok {
		*p = uint(v)
	}
}

// Uint8 is Uint for uint8.
func (d *Decoder) Uint8(p *uint8) {
	if v, ok := d.unsigned(math.MaxUint8); ok {
		*p = uint8(v)
	}
}

// Uint16 is Uint for uint16.
func (d *Decoder) Uint16(p *uint16) {
	if v, ok := d.unsigned(math.MaxUint16); ok {
		*p = uint16(v)
	}
}

// Uint32 is Uint for uint32.
func (d *Decoder) Uint32(p *uint32) {
	if v, ok := d.unsigned(math.MaxUint32); ok {
		*p = uint32(v)
	}
}

// Uint64 is Uint for uint64.
func (d *Decoder) Uint64(p *uint64) {
	if v, ok := d.unsigned(math.MaxUint64); ok {
		*p = v
	}
}

// Uintptr is Uint for uintptr.
func (d *Decoder) Uintptr(p *uintptr) {
	if v, ok := d.unsigned(uint64(^uintptr(0))); ok {
		*p = uintptr(v)
	}
}

// float reads a number as strconv.ParseFloat(s, bits) does; a value out of
// range fails.
func (d *Decoder) float(bits int) (float64, bool) {
	if d.failed {
		return 0, false
	}
	switch c := d.next(); {
	case c == 'n':
		d.literal("null")
		return 0, false
	case c != '-' && !isDigit(c):
		d.failed = true
		return 0, false
	}
	start := d.pos
	end, _ := scanNumber(d.data, start)
	if end < 0 {
		d.failed = true
		return 0, false
	}
	// ParseFloat keeps no reference to s (its errors hold a copy).
	s := unsafe.String(&d.data[start], end-start)
	f, err := strconv.ParseFloat(s, bits)
	if err != nil {
		d.failed = true
		return 0, false
	}
	d.pos = end
	return f, true
}

// Float32 reads a number into *p; null leaves *p as it is. A value beyond
// float32's range fails.
func (d *Decoder) Float32(p *float32) {
	if v, ok := d.float(32); ok {
		*p = float32(v)
	}
}

// Float64 reads a number into *p; null leaves *p as it is. A value beyond
// float64's range fails.
func (d *Decoder) Float64(p *float64) {
	if v, ok := d.float(64); ok {
		*p = v
	}
}

// Std reads the next value, checked as skip checks it, with
// encoding/json.Unmarshal into p (a pointer to the field); an error fails.
// The generated code uses it for every type it does not decode itself.
func (d *Decoder) Std(p any) {
	if d.failed {
		return
	}
	d.next()
	start := d.pos
	d.skipValue()
	if d.failed {
		return
	}
	if json.Unmarshal(d.data[start:d.pos], p) != nil {
		d.failed = true
	}
}

// skip skips the next value, checking it as json.Valid does, with the
// arrays and objects open around it counting towards the nesting limit.
func (d *Decoder) skip() {
	if d.failed {
		return
	}
	d.skipValue()
}

// skipValue is skip. It recurses once per nested array or object, at most
// maxDepth deep.
func (d *Decoder) skipValue() {
	switch c := d.next(); c {
	case '{':
		d.pos++
		if !d.push() {
			return
		}
		for i := 0; ; i++ {
			c, more := d.item(i, '}')
			if !more {
				return
			}
			if c != '"' {
				d.failed = true
				return
			}
			end, _ := scanString(d.data, d.pos)
			if end < 0 {
				d.failed = true
				return
			}
			d.pos = end
			if d.next() != ':' {
				d.failed = true
				return
			}
			d.pos++
			d.skipValue()
			if d.failed {
				return
			}
		}
	case '[':
		for i := 0; d.Element(i); i++ {
			d.skipValue()
		}
	case '"':
		end, _ := scanString(d.data, d.pos)
		if end < 0 {
			d.failed = true
			return
		}
		d.pos = end
	case 't':
		d.literal("true")
	case 'f':
		d.literal("false")
	case 'n':
		d.literal("null")
	default:
		if c != '-' && !isDigit(c) {
			d.failed = true
			return
		}
		end, _ := scanNumber(d.data, d.pos)
		if end < 0 {
			d.failed = true
			return
		}
		d.pos = end
	}
}

// Flag, Body and Text are bool, []byte and string, named from this
// package so that the generated code means them even in a package that
// declares its own bool, byte or string at package level.
type (
	Flag = bool
	Body = []byte
	Text = string
)

// New points *p at a new zero value, and returns it for the value to be
// decoded into. The generated code calls it, rather than the builtin new,
// for a pointer that is not JSON null, so that it means the builtin even in
// a package that declares its own new.
func New[T any](p **T) *T {
	*p = new(T)
	return *p
}

// Next appends a zero element to *s, and returns it for the element to be
// decoded into. The generated code calls it, rather than the builtins
// append and len, for each element of an array.
func Next[S ~[]E, E any](s *S) *E {
	var zero E
	*s = append(*s, zero)
	return &(*s)[len(*s)-1]
}

// NotNil makes *s an empty slice when it is nil, as encoding/json makes a
// slice of the array []. The generated code calls it after the elements of
// an array.
func NotNil[S ~[]E, E any](s *S) {
	if *s == nil {
		*s = S{}
	}
}
