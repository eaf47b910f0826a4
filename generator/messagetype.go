package generator

import (
	"fmt"
	"go/token"
	"go/types"
	"strings"

	"github.com/streamgen/streamgen/generator/internal/jsonfield"
)

// checkMessageType checks the message parameter type of handler: a named,
// exported, non-generic type or a pointer to one, that encoding/json can
// decode; or a pointer to a protocol buffer message, which protobuf and
// its JSON mapping decode; or runtime.Delivery, which is not decoded. It
// returns the named type and whether the handler takes a pointer.
func checkMessageType(handler string, t types.Type, pos token.Pos, pkg *types.Package, ds *diagnostics) (*types.Named, bool, bool) {
	qual := qualifier(pkg)
	written := t
	pointer := false
	if p, ok := types.Unalias(t).(*types.Pointer); ok {
		pointer = true
		t = p.Elem()
	}
	named, ok := types.Unalias(t).(*types.Named)
	switch {
	case !ok || named.Obj().Pkg() == nil:
		ds.add(pos, "the message parameter of %s is %s: a message type must be a named type (usually a struct, type Job struct{...}) or a pointer to one", handler, types.TypeString(written, qual))
		return nil, false, false
	case named.TypeArgs().Len() > 0:
		ds.add(pos, "message type %s of %s is an instance of a generic type: declare a named type for it (type %sMessage %s) and take that", types.TypeString(named, qual), handler, named.Obj().Name(), types.TypeString(named, qual))
		return nil, false, false
	case !named.Obj().Exported():
		ds.add(pos, "message type %s of %s is unexported: publishers in other packages send it, so export it (%s)", named.Obj().Name(), handler, exportedName(named.Obj().Name()))
		return nil, false, false
	}
	switch {
	case isDelivery(named):
		return named, pointer, true // not decoded
	case IsProtoMessage(named) && !pointer:
		ds.add(pos, "%s takes the protocol buffer message %s by value, and a protocol buffer message must not be copied (it holds the state of its encoding): take *%s", handler, types.TypeString(named, qual), types.TypeString(named, qual))
		return nil, false, false
	case IsProtoMessage(named):
		return named, pointer, true // protobuf and protojson read it
	}
	good := true
	for _, problem := range undecodable(named, qual) {
		ds.add(pos, "message type %s of %s cannot be decoded from JSON: %s", types.TypeString(named, qual), handler, problem)
		good = false
	}
	return named, pointer, good
}

// exportedName returns name with its first letter in upper case.
func exportedName(name string) string {
	if name == "" {
		return name
	}
	return strings.ToUpper(name[:1]) + name[1:]
}

// undecodable lists why encoding/json cannot decode a message into t, each
// naming the field path ("Job.Done is a chan int; ..."). Types that
// implement json.Unmarshaler or encoding.TextUnmarshaler decode themselves
// and are not looked into; fields json ignores (unexported, tagged
// `json:"-"`, or hidden by another field of their name) are skipped.
func undecodable(t *types.Named, qual types.Qualifier) []string {
	c := decodeChecker{qual: qual, seen: map[*types.Named]bool{}, root: t}
	if decodesItself(t) {
		return nil
	}
	if iface, ok := t.Underlying().(*types.Interface); ok {
		what := "an interface"
		if iface.Empty() {
			what = "an empty interface"
		}
		return []string{fmt.Sprintf("%s is %s, and JSON cannot decode into an interface; make it a struct, or implement json.Unmarshaler on it", t.Obj().Name(), what)}
	}
	c.walk(t, t.Obj().Name())
	return c.problems
}

// decodeChecker walks a type the way encoding/json decodes into it.
type decodeChecker struct {
	qual     types.Qualifier
	seen     map[*types.Named]bool
	root     *types.Named
	problems []string
}

func (c *decodeChecker) fail(path, format string, args ...any) {
	c.problems = append(c.problems, fmt.Sprintf("%s is %s; tag the field `json:\"-\"`, change its type, or implement json.Unmarshaler on %s",
		path, fmt.Sprintf(format, args...), c.root.Obj().Name()))
}

func (c *decodeChecker) walk(t types.Type, path string) {
	t = types.Unalias(t)
	if n, ok := t.(*types.Named); ok {
		if c.seen[n] || decodesItself(n) {
			return
		}
		c.seen[n] = true
	}
	switch u := t.Underlying().(type) {
	case *types.Basic:
		switch {
		case u.Info()&types.IsComplex != 0:
			c.fail(path, "a %s", types.TypeString(t, c.qual))
		case u.Kind() == types.UnsafePointer:
			c.fail(path, "an unsafe.Pointer")
		}
	case *types.Chan:
		c.fail(path, "a %s", types.TypeString(t, c.qual))
	case *types.Signature:
		c.fail(path, "a func")
	case *types.Interface:
		if !u.Empty() {
			c.fail(path, "the interface %s, which JSON cannot decode into", types.TypeString(t, c.qual))
		}
	case *types.Pointer:
		c.walk(u.Elem(), path)
	case *types.Slice:
		c.walk(u.Elem(), path+"[]")
	case *types.Array:
		c.walk(u.Elem(), path+"[]")
	case *types.Map:
		if !c.mapKeyOK(u.Key()) {
			c.fail(path, "a map with key type %s (JSON object keys decode only into strings, integers and encoding.TextUnmarshaler types)", types.TypeString(u.Key(), c.qual))
		}
		c.walk(u.Elem(), path+"[]")
	case *types.Struct:
		c.walkStruct(u, types.TypeString(t, nil), path)
	}
}

// walkStruct walks the fields encoding/json decodes into, the ones
// jsonfield.Of lists: promoted fields that a shallower or tagged field of
// the same name hides, or that tie with another, are not decoded and so not
// looked into. id identifies s for jsonfield.Of.
func (c *decodeChecker) walkStruct(s *types.Struct, id, path string) {
	for _, f := range jsonfield.Of(s, id) {
		c.walk(f.Type, path+fieldSelector(s, f.Index))
	}
}

// fieldSelector writes the Go selector of the field at index in s, through
// the embedded structs it is promoted from: ".Inner.X".
func fieldSelector(s *types.Struct, index []int) string {
	var b strings.Builder
	for _, i := range index {
		f := s.Field(i)
		b.WriteString(".")
		b.WriteString(f.Name())
		t := types.Unalias(f.Type())
		if p, ok := t.(*types.Pointer); ok {
			t = types.Unalias(p.Elem())
		}
		s, _ = t.Underlying().(*types.Struct)
	}
	return b.String()
}

// mapKeyOK reports whether encoding/json can decode object keys into t: a
// string or integer kind, or a type whose pointer is an
// encoding.TextUnmarshaler (so never a pointer).
func (c *decodeChecker) mapKeyOK(t types.Type) bool {
	t = types.Unalias(t)
	if b, ok := t.Underlying().(*types.Basic); ok && b.Info()&(types.IsString|types.IsInteger) != 0 {
		return true
	}
	if _, ok := t.(*types.Pointer); ok {
		return false
	}
	return jsonfield.HasMethod(t, "UnmarshalText")
}
