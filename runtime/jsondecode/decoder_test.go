//go:build !goexperiment.jsonv2

package jsondecode

import (
	"encoding/json"
	"math"
	"strconv"
	"strings"
	"testing"
	"time"
)

// at returns a Decoder positioned at the start of s, as if a value were
// expected there (inside a document that Start has opened).
func at(s string) Decoder { return Decoder{data: []byte(s)} }

func TestStart(t *testing.T) {
	cases := []struct {
		in string
		ok bool
	}{
		{`{}`, true},
		{" \t\r\n{}", true},
		{`{`, true}, // Start looks only at the first byte; Object and End do the rest
		{``, false},
		{`   `, false},
		{`null`, false},
		{`[]`, false},
		{`"x"`, false},
		{`1`, false},
		{"\ufeff{}", false}, // a byte order mark is not whitespace
		{"\f{}", false},
		{"\v{}", false},
		{"\u00a0{}", false},
	}
	for _, c := range cases {
		d := Start([]byte(c.in))
		if got := !d.failed; got != c.ok {
			t.Errorf("Start(%q): ok %v, want %v", c.in, got, c.ok)
		}
		if c.ok && d.data[d.pos] != '{' {
			t.Errorf("Start(%q) is at %q, want the '{'", c.in, d.data[d.pos:])
		}
	}
}

// walk reads a whole document as an object, skipping each member's value,
// and returns the keys.
func walk(body string) ([]string, bool) {
	d := Start([]byte(body))
	var keys []string
	if d.Object() {
		for i := 0; d.Member(i); i++ {
			keys = append(keys, string(d.Key()))
			d.skip()
		}
	}
	return keys, d.End()
}

func TestObjectMemberEnd(t *testing.T) {
	cases := []struct {
		in   string
		keys string // joined by "|"
		ok   bool
	}{
		{`{}`, "", true},
		{` { } `, "", true},
		{"\t{\n}\r\n", "", true},
		{`{"a":1}`, "a", true},
		{`{"a":1,"b":2}`, "a|b", true},
		{" { \"a\" \t:\n 1 \r, \"b\" : [ ] , \"c\":{ } } ", "a|b|c", true},
		{`{"":1}`, "", true},
		{`{"é":1}`, "é", true},
		{"{\"\xff\":1}", "\xff", true}, // not UTF-8: kept as it is (and Unknown would fail on it)
		{`{"a b/c'd":1}`, "a b/c'd", true},

		{`{`, "", false},
		{`{"a":1`, "a", false},
		{`{"a":1,}`, "a", false},
		{`{"a":1 "b":2}`, "a", false},
		{`{,"a":1}`, "", false},
		{`{"a" 1}`, "", false},
		{`{"a"}`, "", false},
		{`{"a":}`, "a", false},
		{`{"a":,}`, "a", false},
		{`{"a":1,,"b":2}`, "a", false},
		{`{a:1}`, "", false},
		{`{'a':1}`, "", false},
		{`{1:1}`, "", false},
		{`{"a":1]`, "a", false},
		{`{"a`, "", false},
		{`{"a\"b":1}`, "", false},    // a key with an escape fails
		{`{"\u0061":1}`, "", false},  // even one encoding/json would read as "a"
		{"{\"a\x01\":1}", "", false}, // a control byte is not JSON
		{"{\"a\x1f\":1}", "", false},
		{`{}}`, "", false},
		{`{} {}`, "", false},
		{`{}x`, "", false},
		{"{}\f", "", false},
		{"{}\x00", "", false},
		{`{"a":1}}`, "a", false},
		{`null`, "", false},
	}
	for _, c := range cases {
		keys, ok := walk(c.in)
		if ok != c.ok {
			t.Errorf("%q: ok %v, want %v", c.in, ok, c.ok)
		}
		if ok != json.Valid([]byte(c.in)) && !strings.Contains(c.in, `\`) && c.in != "null" {
			t.Errorf("%q: ok %v, json.Valid disagrees", c.in, ok)
		}
		if got := strings.Join(keys, "|"); got != c.keys {
			t.Errorf("%q: keys %q, want %q", c.in, got, c.keys)
		}
	}
}

func TestObjectNull(t *testing.T) {
	for _, c := range []struct {
		in     string
		object bool
		ok     bool
	}{
		{`null`, false, true},
		{` null `, false, true},
		{`{}`, true, true},
		{`nullx`, false, false},
		{`nul`, false, false},
		{`[]`, false, false},
		{`"{}"`, false, false},
		{`1`, false, false},
		{`true`, false, false},
		{``, false, false},
	} {
		d := at(c.in)
		object := d.Object()
		if object {
			for i := 0; d.Member(i); i++ {
				d.skip()
			}
		}
		ok := d.End()
		if object != c.object || ok != c.ok {
			t.Errorf("%q: Object %v, End %v; want %v, %v", c.in, object, ok, c.object, c.ok)
		}
	}
}

func TestSeen(t *testing.T) {
	var seenA, seenB bool
	d := Start([]byte(`{"a":1,"b":2,"a":3}`))
	var keys []string
	if d.Object() {
		for i := 0; d.Member(i); i++ {
			keys = append(keys, string(d.Key()))
			switch string(d.Key()) {
			case "a":
				d.Seen(&seenA)
			case "b":
				d.Seen(&seenB)
			}
			d.skip()
		}
	}
	if !d.failed || d.End() {
		t.Fatal("a repeated key did not fail")
	}
	if got := strings.Join(keys, "|"); got != "a|b|a" {
		t.Errorf("keys %q, want a|b|a", got)
	}

	d = Start([]byte(`{}`))
	seen := false
	d.Seen(&seen)
	if d.failed || !seen {
		t.Errorf("first Seen: failed %v, seen %v", d.failed, seen)
	}
}

func TestUnknown(t *testing.T) {
	names := []string{"id", "customer", "K", "\u017fku", "Ünï"}
	cases := []struct {
		in string
		ok bool
	}{
		{`{"other":1}`, true},
		{`{"other":{"id":[1,2,{"x":null}],"y":"z"}}`, true},
		{`{"idx":1}`, true},
		{`{"i":1}`, true},
		{`{"":1}`, true},
		{`{"ID":1}`, false},       // encoding/json would take it for "id"
		{`{"Customer":1}`, false}, // likewise
		{`{"k":1}`, false},        // "K"
		{"{\"\u212a\":1}", false}, // Kelvin sign: a byte beyond ASCII
		{`{"SKU":1}`, false},      // "ſku" folds to "SKU"
		{`{"sku":1}`, false},
		{`{"é":1}`, false}, // beyond ASCII: fails whether or not it would match
		{"{\"\xff\":1}", false},
		{`{"other":[1,2}`, false},
		{`{"other":01}`, false},
		{`{"other":"\x"}`, false},
		{`{"other":tru}`, false},
		{`{"other":}`, false},
	}
	for _, c := range cases {
		d := Start([]byte(c.in))
		if d.Object() {
			for i := 0; d.Member(i); i++ {
				d.Unknown(names...)
			}
		}
		if ok := d.End(); ok != c.ok {
			t.Errorf("%q: ok %v, want %v", c.in, ok, c.ok)
		}
	}
}

func TestNull(t *testing.T) {
	for _, c := range []struct {
		in   string
		null bool
		ok   bool // End afterwards
	}{
		{`null`, true, true},
		{" \n null \t", true, true},
		{`nullx`, false, false},
		{`null1`, false, false},
		{`nul`, false, false},
		{`n`, false, false},
		{`NULL`, false, false},
		{`1`, false, false}, // not consumed: End sees it
		{`[]`, false, false},
		{`""`, false, false},
	} {
		d := at(c.in)
		null := d.Null()
		if null != c.null {
			t.Errorf("%q: Null %v, want %v", c.in, null, c.null)
		}
		if ok := d.End(); ok != c.ok {
			t.Errorf("%q: End %v, want %v", c.in, ok, c.ok)
		}
	}
	d := at(`1`)
	if d.Null() || d.failed || d.pos != 0 {
		t.Errorf("Null on 1: consumed or failed")
	}
	var n int
	d.Int(&n)
	if !d.End() || n != 1 {
		t.Errorf("Int after Null on 1: %d, end %v", n, d.End())
	}
}

// ints reads an array of ints as generated code does.
func ints(in string) ([]int, bool) {
	d := at(in)
	var s []int
	if !d.Null() {
		s = []int{}
		for i := 0; d.Element(i); i++ {
			s = append(s, 0)
			d.Int(&s[i])
		}
	}
	return s, d.End()
}

func TestElement(t *testing.T) {
	cases := []struct {
		in   string
		want string // fmt of the slice, "nil" for nil
		ok   bool
	}{
		{`[]`, "[]", true},
		{` [ ] `, "[]", true},
		{`[1]`, "[1]", true},
		{`[1,2,3]`, "[1 2 3]", true},
		{" [\n1 ,\t2\r, 3 ] ", "[1 2 3]", true},
		{`null`, "nil", true},
		{`[null,2]`, "[0 2]", true},

		{`[`, "[]", false},
		{`[1`, "[1]", false},
		{`[1,]`, "[1]", false},
		{`[,1]`, "[]", false},
		{`[1,,2]`, "[1]", false},
		{`[1 2]`, "[1]", false},
		{`[1}`, "[1]", false},
		{`[1]]`, "[1]", false},
		{`{}`, "[]", false},
		{`1`, "[]", false},
		{`"[]"`, "[]", false},
		{`nul`, "[]", false},
	}
	for _, c := range cases {
		s, ok := ints(c.in)
		got := "nil"
		if s != nil {
			got = fmtInts(s)
		}
		if ok != c.ok {
			t.Errorf("%q: ok %v, want %v", c.in, ok, c.ok)
		}
		if got != c.want {
			t.Errorf("%q: %s, want %s", c.in, got, c.want)
		}
	}
}

func fmtInts(s []int) string {
	parts := make([]string, len(s))
	for i, n := range s {
		parts[i] = strconv.Itoa(n)
	}
	return "[" + strings.Join(parts, " ") + "]"
}

func TestBool(t *testing.T) {
	for _, c := range []struct {
		in   string
		init bool
		want bool
		ok   bool
	}{
		{`true`, false, true, true},
		{`false`, true, false, true},
		{` true `, false, true, true},
		{`null`, true, true, true},
		{`null`, false, false, true},
		{`truex`, false, false, false},
		{`true1`, false, false, false},
		{`tru`, false, false, false},
		{`falsey`, false, false, false},
		{`True`, false, false, false},
		{`"true"`, false, false, false},
		{`1`, false, false, false},
		{`0`, true, true, false},
		{`[]`, false, false, false},
		{``, false, false, false},
	} {
		d := at(c.in)
		v := c.init
		d.Bool(&v)
		ok := d.End()
		if ok != c.ok || (ok && v != c.want) {
			t.Errorf("Bool(%q) from %v: %v, ok %v; want %v, ok %v", c.in, c.init, v, ok, c.want, c.ok)
		}
	}
}

func TestString(t *testing.T) {
	for _, c := range []struct {
		in   string
		want string
		ok   bool
	}{
		{`""`, "", true},
		{`"abc"`, "abc", true},
		{` "a b" `, "a b", true},
		{`"é€😀"`, "é€😀", true},
		{"\"\x7f\"", "\x7f", true},
		{"\"\uFFFD\"", "\uFFFD", true}, // U+FFFD written out is valid UTF-8
		{`null`, "init", true},
		{`"a\"b"`, `a"b`, true},
		{`"a\\b\/c"`, `a\b/c`, true},
		{`"\b\f\n\r\t"`, "\b\f\n\r\t", true},
		{`"\u00e9\u20AC"`, "é€", true},
		{`"\ud83d\ude00"`, "😀", true},
		{`"\ud83d"`, "\uFFFD", true},   // a lone surrogate, as encoding/json reads it
		{`"\ud83dx"`, "\uFFFDx", true}, // likewise
		{`"\ude00\ud83d"`, "\uFFFD\uFFFD", true},
		{`"\u0000"`, "\x00", true},

		{"\"\xff\"", "", false},         // not UTF-8
		{"\"\xed\xa0\x80\"", "", false}, // a surrogate encoded in UTF-8 is not UTF-8
		{"\"\xc3\"", "", false},         // truncated
		{"\"\\n\xff\"", "", false},      // not UTF-8, with an escape
		{"\"a\x00\"", "", false},        // control bytes are not JSON
		{"\"a\nb\"", "", false},
		{"\"\t\"", "", false},
		{`"\x"`, "", false},
		{`"\'"`, "", false},
		{`"\u00e"`, "", false},
		{`"\u00eg"`, "", false},
		{`"\U00e9"`, "", false},
		{`"abc`, "", false},
		{`"abc\"`, "", false},
		{`"a"b"`, "", false},
		{`'a'`, "", false},
		{`1`, "", false},
		{`true`, "", false},
		{`nul`, "", false},
		{`["a"]`, "", false},
		{`{}`, "", false},
	} {
		d := at(c.in)
		v := "init"
		d.String(&v)
		ok := d.End()
		if ok != c.ok || (ok && v != c.want) {
			t.Errorf("String(%q): %q, ok %v; want %q, ok %v", c.in, v, ok, c.want, c.ok)
		}
	}
}

// intTexts are the integers every integer method is tried with; each method
// accepts those within its type's range.
var intTexts = []string{
	"0", "-0", "1", "-1", "127", "128", "-128", "-129", "255", "256",
	"32767", "32768", "-32768", "-32769", "65535", "65536",
	"2147483647", "2147483648", "-2147483648", "-2147483649", "4294967295", "4294967296",
	"9223372036854775807", "9223372036854775808", "-9223372036854775808", "-9223372036854775809",
	"18446744073709551615", "18446744073709551616", "-18446744073709551615", "-18446744073709551616",
	"99999999999999999999", "123456789012345678901234567890", "-123456789012345678901234567890",
}

func TestIntegers(t *testing.T) {
	type method struct {
		name   string
		lo, hi string // the type's range, as text
		read   func(d *Decoder) (string, bool)
	}
	// Each read starts from 7, so that a no-op shows.
	methods := []method{
		{"Int", strconv.Itoa(math.MinInt), strconv.Itoa(math.MaxInt), func(d *Decoder) (string, bool) {
			v := int(7)
			d.Int(&v)
			return strconv.FormatInt(int64(v), 10), d.End()
		}},
		{"Int8", "-128", "127", func(d *Decoder) (string, bool) {
			v := int8(7)
			d.Int8(&v)
			return strconv.FormatInt(int64(v), 10), d.End()
		}},
		{"Int16", "-32768", "32767", func(d *Decoder) (string, bool) {
			v := int16(7)
			d.Int16(&v)
			return strconv.FormatInt(int64(v), 10), d.End()
		}},
		{"Int32", "-2147483648", "2147483647", func(d *Decoder) (string, bool) {
			v := int32(7)
			d.Int32(&v)
			return strconv.FormatInt(int64(v), 10), d.End()
		}},
		{"Int64", "-9223372036854775808", "9223372036854775807", func(d *Decoder) (string, bool) {
			v := int64(7)
			d.Int64(&v)
			return strconv.FormatInt(v, 10), d.End()
		}},
		{"Uint", "0", strconv.FormatUint(math.MaxUint, 10), func(d *Decoder) (string, bool) {
			v := uint(7)
			d.Uint(&v)
			return strconv.FormatUint(uint64(v), 10), d.End()
		}},
		{"Uint8", "0", "255", func(d *Decoder) (string, bool) {
			v := uint8(7)
			d.Uint8(&v)
			return strconv.FormatUint(uint64(v), 10), d.End()
		}},
		{"Uint16", "0", "65535", func(d *Decoder) (string, bool) {
			v := uint16(7)
			d.Uint16(&v)
			return strconv.FormatUint(uint64(v), 10), d.End()
		}},
		{"Uint32", "0", "4294967295", func(d *Decoder) (string, bool) {
			v := uint32(7)
			d.Uint32(&v)
			return strconv.FormatUint(uint64(v), 10), d.End()
		}},
		{"Uint64", "0", "18446744073709551615", func(d *Decoder) (string, bool) {
			v := uint64(7)
			d.Uint64(&v)
			return strconv.FormatUint(v, 10), d.End()
		}},
		{"Uintptr", "0", strconv.FormatUint(uint64(^uintptr(0)), 10), func(d *Decoder) (string, bool) {
			v := uintptr(7)
			d.Uintptr(&v)
			return strconv.FormatUint(uint64(v), 10), d.End()
		}},
	}
	// within reports whether the integer text s lies in [lo, hi], by
	// comparing decimal strings.
	within := func(s, lo, hi string) bool {
		cmp := func(a, b string) int { // a, b: optional '-', then digits
			an, bn := strings.HasPrefix(a, "-"), strings.HasPrefix(b, "-")
			a, b = strings.TrimPrefix(a, "-"), strings.TrimPrefix(b, "-")
			if a == "0" {
				an = false
			}
			if b == "0" {
				bn = false
			}
			mag := len(a) - len(b)
			if mag == 0 {
				mag = strings.Compare(a, b)
			}
			switch {
			case an && bn:
				return -mag
			case an:
				return -1
			case bn:
				return 1
			}
			return mag
		}
		return cmp(lo, s) <= 0 && cmp(s, hi) <= 0
	}
	for _, m := range methods {
		for _, s := range intTexts {
			// "-0" is 0 for ParseInt but a syntax error for ParseUint.
			want := within(s, m.lo, m.hi) && !(s == "-0" && m.lo == "0")
			wantV := strings.TrimPrefix(s, "-")
			if s != "-0" && strings.HasPrefix(s, "-") {
				wantV = s
			}
			for _, in := range []string{s, " " + s + " ", "\n\t" + s + "\r"} {
				d := at(in)
				v, ok := m.read(&d)
				if ok != want || (ok && v != wantV) {
					t.Errorf("%s(%q): %s, ok %v; want %s, ok %v", m.name, in, v, ok, wantV, want)
				}
			}
		}
		for _, c := range []struct {
			in   string
			want string // "" for a failure
		}{
			{"null", "7"},
			{" null ", "7"},
			{"1e2", ""},
			{"1E2", ""},
			{"1.0", ""},
			{"1.5", ""},
			{"0.0", ""},
			{"1e0", ""},
			{"01", ""},
			{"00", ""},
			{"-", ""},
			{"--1", ""},
			{"+1", ""},
			{".5", ""},
			{"1.", ""},
			{"1e", ""},
			{"1x", ""},
			{"1 2", ""},
			{`"1"`, ""},
			{"true", ""},
			{"nul", ""},
			{"nullx", ""},
			{"[1]", ""},
			{"{}", ""},
			{"0x10", ""},
			{"1_000", ""},
			{"Infinity", ""},
			{"", ""},
		} {
			d := at(c.in)
			v, ok := m.read(&d)
			if ok != (c.want != "") || (ok && v != c.want) {
				t.Errorf("%s(%q): %s, ok %v; want %q", m.name, c.in, v, ok, c.want)
			}
		}
	}
}

func TestFloats(t *testing.T) {
	for _, c := range []struct {
		in  string
		f32 float32
		ok  bool // for float32
		f64 float64
		ok6 bool // for float64
	}{
		{"0", 0, true, 0, true},
		{"1", 1, true, 1, true},
		{"-1.5", -1.5, true, -1.5, true},
		{"1e2", 100, true, 100, true},
		{"1E+2", 100, true, 100, true},
		{"25e-1", 2.5, true, 2.5, true},
		{"0.1", 0.1, true, 0.1, true},
		{"123456789", 123456792, true, 123456789, true},
		{"3.4028234663852886e38", math.MaxFloat32, true, 3.4028234663852886e38, true},
		{"3.5e38", 0, false, 3.5e38, true},
		{"-3.5e38", 0, false, -3.5e38, true},
		{"1e39", 0, false, 1e39, true},
		{"1.7976931348623157e308", 0, false, math.MaxFloat64, true},
		{"1.8e308", 0, false, 0, false},
		{"-1e400", 0, false, 0, false},
		{"1e-400", 0, true, 0, true}, // underflow to 0 is no error
		{"1e-50", 0, true, 1e-50, true},
		{"4.9406564584124654e-324", 0, true, 5e-324, true},
		{"18446744073709551616", 18446744073709551616, true, 18446744073709551616, true},
		{"0.30000000000000004", 0.3, true, 0.30000000000000004, true},
	} {
		for _, in := range []string{c.in, " " + c.in + "\n"} {
			d := at(in)
			v32 := float32(7)
			d.Float32(&v32)
			if ok := d.End(); ok != c.ok || (ok && v32 != c.f32) {
				t.Errorf("Float32(%q): %v, ok %v; want %v, ok %v", in, v32, ok, c.f32, c.ok)
			}
			d = at(in)
			v64 := float64(7)
			d.Float64(&v64)
			if ok := d.End(); ok != c.ok6 || (ok && v64 != c.f64) {
				t.Errorf("Float64(%q): %v, ok %v; want %v, ok %v", in, v64, ok, c.f64, c.ok6)
			}
		}
	}
	d := at("-0")
	var f float64
	d.Float64(&f)
	if !d.End() || f != 0 || !math.Signbit(f) {
		t.Errorf("Float64(-0): %v (sign %v)", f, math.Signbit(f))
	}
	d = at("-0.0e5")
	var f32 float32
	d.Float32(&f32)
	if !d.End() || f32 != 0 || !math.Signbit(float64(f32)) {
		t.Errorf("Float32(-0.0e5): %v (sign %v)", f32, math.Signbit(float64(f32)))
	}
	for _, in := range []string{"null", " null "} {
		d := at(in)
		v := 7.5
		d.Float64(&v)
		if !d.End() || v != 7.5 {
			t.Errorf("Float64(%q): %v, want 7.5 left as it was", in, v)
		}
	}
	for _, in := range []string{
		"", "-", "+1", ".5", "1.", "1.e5", "1e", "1e+", "01", "-01", "00.5", "1x", "1.5x", "1e5x", "0x1p3",
		"Inf", "NaN", "infinity", "1_0", `"1"`, "true", "[1]", "nul", "1 2", "1,",
	} {
		d := at(in)
		v := 7.5
		d.Float64(&v)
		if d.End() {
			t.Errorf("Float64(%q) accepted: %v", in, v)
		}
		d = at(in)
		v32 := float32(7.5)
		d.Float32(&v32)
		if d.End() {
			t.Errorf("Float32(%q) accepted: %v", in, v32)
		}
	}
}

func TestStd(t *testing.T) {
	t.Run("map", func(t *testing.T) {
		d := at(` {"a": 1, "b": [2]} `)
		var m map[string]any
		d.Std(&m)
		if !d.End() || len(m) != 2 || m["a"] != 1.0 {
			t.Errorf("map: %v", m)
		}
	})
	t.Run("null", func(t *testing.T) {
		d := at(`null`)
		m := map[string]int{"x": 1}
		d.Std(&m)
		if !d.End() || m != nil {
			t.Errorf("null into a map: %v, want nil as encoding/json leaves it", m)
		}
	})
	t.Run("time", func(t *testing.T) {
		d := at(`"2024-05-06T07:08:09Z"`)
		var tm time.Time
		d.Std(&tm)
		if !d.End() || !tm.Equal(time.Date(2024, 5, 6, 7, 8, 9, 0, time.UTC)) {
			t.Errorf("time: %v", tm)
		}
	})
	t.Run("raw", func(t *testing.T) {
		d := at(` [1, {"a" : 2}] ,`)
		var raw json.RawMessage
		d.Std(&raw)
		if d.failed || string(raw) != `[1, {"a" : 2}]` || d.next() != ',' {
			t.Errorf("raw: %q, then %q", raw, d.data[d.pos:])
		}
	})
	t.Run("bytes", func(t *testing.T) {
		d := at(`"aGk="`)
		var b []byte
		d.Std(&b)
		if !d.End() || string(b) != "hi" {
			t.Errorf("bytes: %q", b)
		}
	})
	for _, in := range []string{`"x"`, `1.5`, `[1,]`, `{"a":1`, `1x`, ``, `,`} {
		d := at(in)
		var n int
		d.Std(&n)
		if d.End() {
			t.Errorf("Std(%q) into an int accepted: %d", in, n)
		}
	}
}

func TestSkip(t *testing.T) {
	valid := []string{
		`null`, `true`, `false`, `0`, `-0`, `1`, `-1.5e+3`, `1E-0`, `0.0`, `""`, `"a\"\\\/\b\f\n\r\t\u00aF"`,
		"\"\xff\xfe\"", "\"\x7f\"", `[]`, `{}`, `[[]]`, `[1,"a",null,{},[]]`, `{"a":{"b":[{"c":null}]}}`,
		" [ 1 , 2 ] ", "{ \"a\" : 1 , \"b\" : 2 }", "\t\n\r 1 \t\n\r", `{"a":1,"a":2}`, `{"\u0061":1}`,
	}
	invalid := []string{
		``, ` `, `nul`, `nulll`, `nullx`, `truex`, `True`, `fals`, `01`, `-`, `-a`, `1.`, `.5`, `+1`, `1e`, `1e+`,
		`1x`, `1.5.5`, `0x10`, `"`, `"\"`, `"\x"`, `"\'"`, `"\U0041"`, `"\u12"`, `"\u12g4"`, "\"\x00\"", "\"\x1f\"", `[`, `[1`, `[1,]`,
		`[,1]`, `[1 2]`, `[1:2]`, `{`, `{"a"}`, `{"a":}`, `{"a":1,}`, `{a:1}`, `{"a":1 "b":2}`, `{"a",1}`, `]`,
		`}`, `[}`, `{]`, `1 2`, `[] []`, `'a'`, `NaN`, `Infinity`, "\ufeff1", "1\f", `[1]]`, `{"a":[}`,
	}
	for _, in := range valid {
		d := at(in)
		d.skip()
		if !d.End() {
			t.Errorf("Skip(%q) failed", in)
		}
		if !json.Valid([]byte(in)) {
			t.Errorf("json.Valid(%q) is false: the case is wrong", in)
		}
	}
	for _, in := range invalid {
		d := at(in)
		d.skip()
		if d.End() {
			t.Errorf("Skip(%q) accepted", in)
		}
		if json.Valid([]byte(in)) {
			t.Errorf("json.Valid(%q) is true: the case is wrong", in)
		}
	}
}

// nested returns n arrays nested in one another around inner.
func nested(n int, inner string) string {
	return strings.Repeat("[", n) + inner + strings.Repeat("]", n)
}

func TestDepth(t *testing.T) {
	for _, c := range []struct {
		name string
		in   string
		ok   bool
	}{
		{"skip 10000", nested(maxDepth, ""), true},
		{"skip 10001", nested(maxDepth+1, ""), false},
		{"skip objects 10000", strings.Repeat(`{"a":`, maxDepth-1) + "{}" + strings.Repeat("}", maxDepth-1), true},
		{"skip objects 10001", strings.Repeat(`{"a":`, maxDepth) + "{}" + strings.Repeat("}", maxDepth), false},
	} {
		d := at(c.in)
		d.skip()
		if ok := d.End(); ok != c.ok {
			t.Errorf("%s: ok %v, want %v", c.name, ok, c.ok)
		}
		if json.Valid([]byte(c.in)) != c.ok {
			t.Errorf("%s: json.Valid disagrees with the case", c.name)
		}
	}

	// The object Start opens counts: 1 + 9999 arrays is the limit.
	for _, c := range []struct {
		arrays int
		ok     bool
	}{{maxDepth - 1, true}, {maxDepth, false}} {
		body := `{"x":` + nested(c.arrays, "1") + `}`
		if _, ok := walk(body); ok != c.ok {
			t.Errorf("object around %d arrays: ok %v, want %v", c.arrays, ok, c.ok)
		}
		if json.Valid([]byte(body)) != c.ok {
			t.Errorf("object around %d arrays: json.Valid disagrees with the case", c.arrays)
		}
		d := Start([]byte(body))
		var raw json.RawMessage
		if d.Object() {
			for i := 0; d.Member(i); i++ {
				d.Std(&raw)
			}
		}
		if ok := d.End(); ok != c.ok {
			t.Errorf("Std in an object around %d arrays: ok %v, want %v", c.arrays, ok, c.ok)
		}
	}

	// Object and Element count as well.
	d := Decoder{data: []byte(`{}`), depth: maxDepth - 1}
	if !d.Object() || d.Member(0) || d.failed || d.depth != maxDepth-1 {
		t.Errorf("Object at depth %d: failed %v, depth %d", maxDepth, d.failed, d.depth)
	}
	d = Decoder{data: []byte(`{}`), depth: maxDepth}
	if d.Object() || !d.failed {
		t.Errorf("Object at depth %d did not fail", maxDepth+1)
	}
	d = Decoder{data: []byte(`[]`), depth: maxDepth - 1}
	if d.Element(0) || d.failed || d.depth != maxDepth-1 {
		t.Errorf("Element at depth %d: failed %v, depth %d", maxDepth, d.failed, d.depth)
	}
	d = Decoder{data: []byte(`[]`), depth: maxDepth}
	if d.Element(0) || !d.failed {
		t.Errorf("Element at depth %d did not fail", maxDepth+1)
	}
}

func TestFailedStaysFailed(t *testing.T) {
	d := Start([]byte(`{"a":[1],"b":"x","c":true,"d":1.5}`))
	d.failed = true
	if !d.failed || d.Object() || d.Member(0) || d.Key() != nil || d.Null() || d.Element(0) {
		t.Fatal("a failed Decoder went on")
	}
	seen := false
	d.Seen(&seen)
	b, s, n, f := false, "", 0, 0.0
	var u uint
	d.Bool(&b)
	d.String(&s)
	d.Int(&n)
	d.Uint(&u)
	d.Float64(&f)
	var m map[string]any
	d.Std(&m)
	d.skip()
	d.Unknown()
	if seen || b || s != "" || n != 0 || u != 0 || f != 0 || m != nil || d.pos != 0 || d.End() {
		t.Error("a failed Decoder changed something")
	}
}

func TestEnd(t *testing.T) {
	for _, c := range []struct {
		in string
		ok bool
	}{
		{`{}`, true},
		{"{} \t\r\n", true},
		{`{}x`, false},
		{`{},`, false},
		{`{}{}`, false},
		{"{}\x00", false},
		{"{}\f", false},
		{"{}\u00a0", false},
		{`{"a":{}`, false}, // not closed
	} {
		_, ok := walk(c.in)
		if ok != c.ok {
			t.Errorf("%q: ok %v, want %v", c.in, ok, c.ok)
		}
	}
}

// TestStringUnescapesAsEncodingJSON: escape sequences, surrogate pairs and
// lone surrogate halves come out as encoding/json unquotes them, without
// encoding/json.
func TestStringUnescapesAsEncodingJSON(t *testing.T) {
	for _, lit := range []string{
		`"\u00e4\u00F6"`, `"a\/b\\c\"d"`, `"\b\f\n\r\t"`, `"\u0000"`, `"\u001f x"`,
		`"\ud83d\ude00"`, `"x\ud83d\ude00y"`, `"\ud83d"`, `"\ud83dx"`, `"\ud83d\u0041"`,
		`"\ude00"`, `"\ude00\ud83d"`, `"\ud83d\ud83d\ude00"`, `"\uDBFF\uDFFF"`, `"ü\n€"`,
		`"\uffff\ufffd"`, `"\\u0041"`,
	} {
		var want string
		if err := json.Unmarshal([]byte(lit), &want); err != nil {
			t.Fatalf("%s: %v", lit, err)
		}
		d := Start([]byte(`{"k":` + lit + `}`))
		var got string
		if !d.Object() || !d.Member(0) {
			t.Fatalf("%s: no member", lit)
		}
		d.String(&got)
		if d.Member(1) || !d.End() {
			t.Fatalf("%s: failed", lit)
		}
		if got != want {
			t.Errorf("%s: got %q, encoding/json %q", lit, got, want)
		}
	}
}

// escapedBody holds a string with escapes; escapedText is its text.
const (
	escapedBody = `{"k":"caf\u00e9 \"au lait\""}`
	escapedText = `café "au lait"`
)

// decodeEscaped decodes escapedBody's string into got.
func decodeEscaped(body []byte, got *string) bool {
	d := Start(body)
	d.Object()
	d.Member(0)
	d.String(got)
	d.Member(1)
	return d.End()
}

// An escaped string decodes to its text (BenchmarkEscapedStringAllocation
// counts what it allocates).
func TestEscapedStringDecodes(t *testing.T) {
	var got string
	if !decodeEscaped([]byte(escapedBody), &got) || got != escapedText {
		t.Errorf("got %q, want %q", got, escapedText)
	}
}

// BenchmarkEscapedStringAllocation: an escaped string costs one
// allocation, its text (make bench checks the allocs/op; a test cannot:
// counts move under -race).
func BenchmarkEscapedStringAllocation(b *testing.B) {
	body := []byte(escapedBody)
	var got string
	b.ReportAllocs()
	for b.Loop() {
		if !decodeEscaped(body, &got) {
			b.Fatal("failed")
		}
	}
	if got != escapedText {
		b.Fatalf("got %q", got)
	}
}
