//go:build !goexperiment.jsonv2

package jsondecode

import (
	"strings"
	"testing"
)

// FuzzSkip checks Skip against json.Valid: on a whole document they must
// agree exactly (json.Valid has the same nesting limit), and so must a
// decoder reading the document {"k":in} as an object, but that a key with
// an escape may fail although json.Valid accepts it. (The nesting limit
// itself is TestDepth's: inputs 10000 deep only slow the fuzzer down.)
func FuzzSkip(f *testing.F) {
	for _, s := range []string{
		`null`, `true`, `false`, `nullx`, `truex`, `0`, `-0`, `01`, `1.`, `.5`, `-`, `+1`, `1e`, `1e+9`, `1.5E-3`,
		`""`, `"a\"b\\c\/d\b\f\n\r\t\u00e9"`, `"\ud83d\ude00"`, `"\x"`, `"\u12"`, "\"\xff\"", "\"\x01\"",
		`[]`, `[1,2,[3,{"a":null}]]`, `[1,]`, `[,1]`, `[1 2]`, `{}`, `{"a":1,"b":[true,false]}`, `{"a":1,}`,
		`{"a" 1}`, `{"a":1 "b":2}`, `{"\u0061":1}`, ` { "a" : [ ] } `, `1,"x":2`, `1} {`, `[] []`, "\t\n\r 1 ",
		nested(20, "1"), strings.Repeat(`{"a":`, 20) + "1" + strings.Repeat("}", 20),
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		for _, msg := range checkSkip(in) {
			t.Error(msg)
		}
	})
}

// FuzzScalars checks each scalar method against json.Unmarshal into the
// same type: whatever a method accepts, json.Unmarshal gives the same value
// for; whatever json.Unmarshal rejects, the method fails on; and the method
// accepts whatever json.Unmarshal accepts but a string that is not UTF-8.
func FuzzScalars(f *testing.F) {
	for _, s := range []string{
		`null`, `true`, `false`, `0`, `-0`, `127`, `128`, `-128`, `-129`, `255`, `256`, `-1`,
		`9223372036854775807`, `9223372036854775808`, `-9223372036854775808`, `-9223372036854775809`,
		`18446744073709551615`, `18446744073709551616`, `1e2`, `1.0`, `1.5`, `-1.5e-3`, `3.4028234663852886e38`,
		`3.5e38`, `1e-46`, `1.7976931348623157e308`, `1.8e308`, `4.9e-324`, `01`, `1x`, `"1"`, `""`, `"abc"`,
		`"é€😀"`, `"a\"b\\c\/d\b\f\n\r\t"`, `"\u00e9\ud83d\ude00"`, `"\ud83d"`, "\"\xff\"", "\"\\n\xff\"",
		"\"\x01\"", `"\'"`, ` 1 `, "\t\"x\"\n", `[1]`, `{}`, `nul`, `tru`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		for _, msg := range checkScalars(in) {
			t.Error(msg)
		}
	})
}
