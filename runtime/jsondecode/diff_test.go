//go:build !goexperiment.jsonv2

package jsondecode

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"
)

// gen makes JSON texts, valid and not, from a seeded source: the same
// seed gives the same texts.
type gen struct{ r *rand.Rand }

func newGen(seed uint64) *gen { return &gen{rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))} }

// small returns a number in [0, n), small ones far more often.
func (g *gen) small(n int) int { return g.r.IntN(g.r.IntN(n) + 1) }

func (g *gen) ws() string {
	if g.r.IntN(3) != 0 {
		return ""
	}
	var b strings.Builder
	for range 1 + g.small(3) {
		b.WriteByte(" \t\n\r"[g.r.IntN(4)])
	}
	return b.String()
}

func (g *gen) digits(b *strings.Builder, n int) {
	for range n {
		b.WriteByte(byte('0' + g.r.IntN(10)))
	}
}

// number returns a number that JSON's grammar accepts.
func (g *gen) number() string {
	var b strings.Builder
	if g.r.IntN(3) == 0 {
		b.WriteByte('-')
	}
	if g.r.IntN(4) == 0 {
		b.WriteByte('0')
	} else {
		b.WriteByte(byte('1' + g.r.IntN(9)))
		g.digits(&b, g.small(26))
	}
	if g.r.IntN(3) == 0 {
		b.WriteByte('.')
		g.digits(&b, 1+g.small(20))
	}
	if g.r.IntN(4) == 0 {
		b.WriteByte("eE"[g.r.IntN(2)])
		switch g.r.IntN(3) {
		case 0:
			b.WriteByte('+')
		case 1:
			b.WriteByte('-')
		}
		g.digits(&b, 1+g.small(4))
	}
	return b.String()
}

// near returns an integer at or next to a bound of an integer type.
func (g *gen) near() string {
	bounds := []string{
		"0", "127", "-128", "255", "32767", "-32768", "65535", "2147483647", "-2147483648", "4294967295",
		"9223372036854775807", "-9223372036854775808", "18446744073709551615",
	}
	s := bounds[g.r.IntN(len(bounds))]
	neg := strings.HasPrefix(s, "-")
	n := &bigDecimal{[]byte(strings.TrimPrefix(s, "-"))}
	n.add(g.r.IntN(5) - 2)
	out := n.String()
	if neg && out != "0" {
		out = "-" + out
	}
	return out
}

// bigDecimal is a non-negative integer in decimal digits, enough to step
// past the bounds of uint64.
type bigDecimal struct{ d []byte }

func (n *bigDecimal) add(k int) {
	for ; k > 0; k-- {
		i := len(n.d) - 1
		for i >= 0 && n.d[i] == '9' {
			n.d[i] = '0'
			i--
		}
		if i < 0 {
			n.d = append([]byte{'1'}, n.d...)
		} else {
			n.d[i]++
		}
	}
	for ; k < 0; k++ {
		if string(n.d) == "0" {
			return
		}
		i := len(n.d) - 1
		for n.d[i] == '0' {
			n.d[i] = '9'
			i--
		}
		n.d[i]--
		if n.d[0] == '0' && len(n.d) > 1 {
			n.d = n.d[1:]
		}
	}
}

func (n *bigDecimal) String() string { return string(n.d) }

// str returns a string token: mostly valid JSON, sometimes with a byte
// that is not UTF-8 (still JSON), rarely with a control byte (not JSON).
func (g *gen) str() string {
	pieces := []string{
		"a", "Z", "0", " ", "~", "\x7f", "é", "€", "😀", "\uFFFD", "\u2028",
		`\"`, `\\`, `\/`, `\b`, `\f`, `\n`, `\r`, `\t`, `\u00e9`, `\u0000`, `\uD83D\uDE00`, `\ud83d`, `\uDE00`, `\u20ac`,
	}
	var b strings.Builder
	b.WriteByte('"')
	for range g.small(12) {
		switch g.r.IntN(40) {
		case 0:
			b.WriteString([]string{"\xff", "\xc3", "\xed\xa0\x80", "\x80", "\xf0\x9f\x98"}[g.r.IntN(5)])
		case 1:
			if g.r.IntN(4) == 0 {
				b.WriteByte(byte(g.r.IntN(0x20)))
			}
		default:
			b.WriteString(pieces[g.r.IntN(len(pieces))])
		}
	}
	b.WriteByte('"')
	return b.String()
}

func (g *gen) key() string {
	keys := []string{`"a"`, `"id"`, `"ID"`, `""`, `"é"`, `"k"`, `"a b"`}
	if g.r.IntN(4) == 0 {
		return g.str()
	}
	return keys[g.r.IntN(len(keys))]
}

// value returns a valid JSON value (but for the rare string generated with
// a control byte), at most depth arrays and objects deep.
func (g *gen) value(depth int) string {
	n := 7
	if depth <= 0 {
		n = 5
	}
	switch g.r.IntN(n) {
	case 0:
		return []string{"null", "true", "false"}[g.r.IntN(3)]
	case 1, 2:
		if g.r.IntN(3) == 0 {
			return g.near()
		}
		return g.number()
	case 3, 4:
		return g.str()
	case 5:
		var b strings.Builder
		b.WriteByte('[')
		for i := range g.small(5) {
			if i > 0 {
				b.WriteByte(',')
			}
			b.WriteString(g.ws() + g.value(depth-1) + g.ws())
		}
		b.WriteString(g.ws() + "]")
		return b.String()
	default:
		var b strings.Builder
		b.WriteByte('{')
		for i := range g.small(5) {
			if i > 0 {
				b.WriteByte(',')
			}
			b.WriteString(g.ws() + g.key() + g.ws() + ":" + g.ws() + g.value(depth-1) + g.ws())
		}
		b.WriteString(g.ws() + "}")
		return b.String()
	}
}

// mutate changes s in a few random places.
func (g *gen) mutate(s string) string {
	const bytes = "{}[],:\"\\' \t0123456789-+.eEtrufalsn/\x00\x1f\x7f\x80\xff\xc3"
	b := []byte(s)
	for range 1 + g.small(3) {
		if len(b) == 0 {
			b = append(b, bytes[g.r.IntN(len(bytes))])
			continue
		}
		i := g.r.IntN(len(b))
		switch g.r.IntN(6) {
		case 0:
			b = append(b[:i], b[i+1:]...)
		case 1:
			b = append(b[:i], append([]byte{bytes[g.r.IntN(len(bytes))]}, b[i:]...)...)
		case 2:
			b[i] = bytes[g.r.IntN(len(bytes))]
		case 3:
			b = b[:i]
		case 4:
			if i+1 < len(b) {
				b[i], b[i+1] = b[i+1], b[i]
			}
		default:
			j := i + g.r.IntN(len(b)-i)
			b = append(b[:j], append(append([]byte{}, b[i:j]...), b[j:]...)...)
		}
	}
	return string(b)
}

// texts returns n texts: valid values, and mutations of them.
func (g *gen) texts(n int) []string {
	out := make([]string, 0, n)
	for len(out) < n {
		v := g.ws() + g.value(4) + g.ws()
		out = append(out, v)
		for range 2 {
			out = append(out, g.mutate(v))
		}
	}
	return out
}

// checkSkip compares Skip with json.Valid on in as a whole document, and
// on the document {"k":in} read as a generated decoder reads an object
// (Member, then Skip for each value). It returns what disagrees.
func checkSkip(in []byte) []string {
	var bad []string
	d := Decoder{data: in}
	d.skip()
	if got, want := d.End(), json.Valid(in); got != want {
		bad = append(bad, fmt.Sprintf("Skip+End(%q) = %v, json.Valid = %v", in, got, want))
	}

	doc := append(append([]byte(`{"k":`), in...), '}')
	d = Start(doc)
	if d.Object() {
		for i := 0; d.Member(i); i++ {
			d.skip()
		}
	}
	got, want := d.End(), json.Valid(doc)
	// A key with an escape fails although it is valid.
	if got && !want || want && !got && !bytes.Contains(doc, []byte(`\`)) {
		bad = append(bad, fmt.Sprintf("the object %q: %v, json.Valid = %v", doc, got, want))
	}
	return bad
}

func TestSkipAgainstValid(t *testing.T) {
	g := newGen(1)
	var valid int
	for _, s := range g.texts(30000) {
		for _, msg := range checkSkip([]byte(s)) {
			t.Error(msg)
		}
		if json.Valid([]byte(s)) {
			valid++
		}
	}
	// Both kinds must be there in numbers for the comparison to mean much.
	if valid < 5000 || valid > 25000 {
		t.Errorf("%d of 30000 texts are valid JSON: the generator is off", valid)
	}
}

// scalarCheck compares one scalar method with json.Unmarshal into the same
// type, on in as a whole document (into a value that starts as init) and
// as the member "v" of an object (into a zero value).
type scalarCheck[T any] struct {
	name string
	init T
	read func(*Decoder, *T)
	same func(a, b T) bool
	// lax, when set, says in may be valid for encoding/json yet fail here
	// (a string that is not UTF-8).
	lax func(in []byte) bool
}

func (c scalarCheck[T]) check(in []byte) []string {
	var bad []string
	compare := func(where string, got T, ok bool, want T, err error) {
		switch {
		case ok && err != nil:
			bad = append(bad, fmt.Sprintf("%s(%s): accepted %v, json.Unmarshal fails: %v", c.name, where, got, err))
		case ok && !c.same(got, want):
			bad = append(bad, fmt.Sprintf("%s(%s): %v, json.Unmarshal gives %v", c.name, where, got, want))
		case !ok && err == nil && (c.lax == nil || !c.lax(in)):
			bad = append(bad, fmt.Sprintf("%s(%s): failed, json.Unmarshal gives %v", c.name, where, want))
		}
	}

	got, want := c.init, c.init
	d := Decoder{data: in}
	c.read(&d, &got)
	ok := d.End()
	err := json.Unmarshal(in, &want)
	compare(fmt.Sprintf("%q", in), got, ok, want, err)

	doc := append(append([]byte(`{"v":`), in...), '}')
	var gotS, wantS struct {
		V T `json:"v"`
	}
	var seen bool
	d = Start(doc)
	if d.Object() {
		for i := 0; d.Member(i); i++ {
			switch string(d.Key()) {
			case "v":
				d.Seen(&seen)
				c.read(&d, &gotS.V)
			default:
				d.Unknown("v")
			}
		}
	}
	ok = d.End()
	err = json.Unmarshal(doc, &wantS)
	// A key with an escape fails although encoding/json may accept it.
	if ok || err != nil || !bytes.Contains(doc, []byte(`\`)) {
		compare(fmt.Sprintf("in %q", doc), gotS.V, ok, wantS.V, err)
	}
	return bad
}

func same[T comparable](a, b T) bool { return a == b }

func notUTF8(in []byte) bool { return !utf8.Valid(in) }

// checkScalars runs every scalar method's check on in.
func checkScalars(in []byte) []string {
	var bad []string
	add := func(msgs []string) { bad = append(bad, msgs...) }
	add(scalarCheck[int]{"Int", 7, (*Decoder).Int, same[int], nil}.check(in))
	add(scalarCheck[int8]{"Int8", 7, (*Decoder).Int8, same[int8], nil}.check(in))
	add(scalarCheck[int16]{"Int16", 7, (*Decoder).Int16, same[int16], nil}.check(in))
	add(scalarCheck[int32]{"Int32", 7, (*Decoder).Int32, same[int32], nil}.check(in))
	add(scalarCheck[int64]{"Int64", 7, (*Decoder).Int64, same[int64], nil}.check(in))
	add(scalarCheck[uint]{"Uint", 7, (*Decoder).Uint, same[uint], nil}.check(in))
	add(scalarCheck[uint8]{"Uint8", 7, (*Decoder).Uint8, same[uint8], nil}.check(in))
	add(scalarCheck[uint16]{"Uint16", 7, (*Decoder).Uint16, same[uint16], nil}.check(in))
	add(scalarCheck[uint32]{"Uint32", 7, (*Decoder).Uint32, same[uint32], nil}.check(in))
	add(scalarCheck[uint64]{"Uint64", 7, (*Decoder).Uint64, same[uint64], nil}.check(in))
	add(scalarCheck[uintptr]{"Uintptr", 7, (*Decoder).Uintptr, same[uintptr], nil}.check(in))
	add(scalarCheck[float32]{"Float32", 7.5, (*Decoder).Float32, func(a, b float32) bool {
		return math.Float32bits(a) == math.Float32bits(b)
	}, nil}.check(in))
	add(scalarCheck[float64]{"Float64", 7.5, (*Decoder).Float64, func(a, b float64) bool {
		return math.Float64bits(a) == math.Float64bits(b)
	}, nil}.check(in))
	add(scalarCheck[string]{"String", "init", (*Decoder).String, same[string], notUTF8}.check(in))
	add(scalarCheck[bool]{"Bool", true, (*Decoder).Bool, same[bool], nil}.check(in))
	return bad
}

// literals returns n texts for the scalar methods: numbers, integers at
// the bounds of their types, strings, literals, and mutations of them.
func (g *gen) literals(n int) []string {
	out := make([]string, 0, n)
	for len(out) < n {
		var v string
		switch g.r.IntN(10) {
		case 0, 1, 2:
			v = g.number()
		case 3, 4:
			v = g.near()
		case 5, 6:
			v = g.str()
		case 7:
			v = []string{"null", "true", "false", "[]", "{}", "[1]", `{"a":1}`}[g.r.IntN(7)]
		case 8:
			// Floats at and beyond the ends of float32 and float64.
			m := []float64{math.MaxFloat32, math.SmallestNonzeroFloat32, math.MaxFloat64, math.SmallestNonzeroFloat64}[g.r.IntN(4)]
			v = strconv.FormatFloat(m*(1+(g.r.Float64()-0.5)*1e-6), 'g', -1, 64)
			if g.r.IntN(2) == 0 {
				v = strconv.FormatFloat(m, 'e', 17+g.r.IntN(3), 64)
			}
		default:
			v = g.mutate(g.number())
		}
		if g.r.IntN(5) == 0 {
			v = g.mutate(v)
		}
		out = append(out, g.ws()+v+g.ws())
	}
	return out
}

func TestScalarsAgainstUnmarshal(t *testing.T) {
	g := newGen(2)
	var fails int
	for _, s := range g.literals(8000) {
		for _, msg := range checkScalars([]byte(s)) {
			t.Error(msg)
			if fails++; fails > 50 {
				t.Fatal("too many")
			}
		}
	}
}
