package generator

import (
	"fmt"
	"go/ast"
	"go/token"
	"go/types"
)

// The import paths of the types a handler signature names.
const (
	runtimePath = "github.com/streamgen/streamgen/runtime"
	contextPath = "context"
	sqlPath     = "database/sql"
)

// acceptedShapes ends every message about a handler's signature.
const acceptedShapes = "a handler is func(ctx context.Context, msg T) error or func(ctx context.Context, msg T, md runtime.Metadata) error, " +
	"may take a tx *sql.Tx right after ctx, and may return runtime.Outcome instead of error; T is a named message type or a pointer to one"

// txShape says what a handler that takes a transaction looks like.
const txShape = "func(ctx context.Context, tx *sql.Tx, msg T) error, with md runtime.Metadata after msg if it needs it"

// acceptedBatchShapes ends every message about a batch handler's signature.
const acceptedBatchShapes = "a batch handler is func(ctx context.Context, msgs []T) error or func(ctx context.Context, msgs []T, mds []runtime.Metadata) error; T is a named message type or a pointer to one"

// handlerShape is what a handler's signature says.
type handlerShape struct {
	// msg is the message type T.
	msg *types.Named
	// pointer is set when the handler takes *T.
	pointer bool
	// metadata is set when the handler takes a runtime.Metadata.
	metadata bool
	// outcome is set when the handler returns runtime.Outcome, not error.
	outcome bool
	// batch is set when the handler takes a slice of messages (and a
	// slice of runtime.Metadata with metadata).
	batch bool
	// tx is set when the handler takes a *sql.Tx after the context: it
	// runs in a transaction of the App's database (runtime.Transactor).
	tx bool
	// reply is the type R of a handler that replies, returning (R,
	// error), or (*R, error) with replyPointer; nil for another handler.
	reply        *types.Named
	replyPointer bool
}

// checkShape checks the signature of an annotated function against the
// accepted handler shapes and the message type against the codec. It
// reports every problem and returns false when there is one. A signature
// that mentions a type with errors is not checked: the type checker already
// reported it.
func checkShape(fd *ast.FuncDecl, fn *types.Func, pkg *types.Package, ds *diagnostics) (handlerShape, bool) {
	sig, ok := fn.Type().(*types.Signature)
	if !ok || hasInvalid(sig) {
		return handlerShape{}, false
	}
	name := handlerName(fd)
	qual := qualifier(pkg)
	if fd.Type.TypeParams != nil && len(fd.Type.TypeParams.List) > 0 {
		ds.add(fd.Name.Pos(), "%s is generic: a handler cannot have type parameters; write one function per message type (%s)", name, acceptedShapes)
		return handlerShape{}, false
	}
	var shape handlerShape
	good := true
	params := sig.Params()
	// m is the index of the message parameter: 2 after a *sql.Tx.
	m := 1
	if params.Len() > 1 && isSQLTxPointer(params.At(1).Type()) {
		shape.tx, m = true, 2
	}
	// misplaced is the index of a database/sql parameter where no handler
	// takes one, or 0.
	misplaced := 0
	for i := m; i < params.Len() && misplaced == 0; i++ {
		if isSQLType(params.At(i).Type()) {
			misplaced = i
		}
	}
	switch {
	case sig.Variadic():
		ds.add(paramPos(fd, params.Len()-1), "%s is variadic: %s", name, acceptedShapes)
		good = false
	case params.Len() > 1 && isNamed(params.At(1).Type(), sqlPath, "Tx"):
		ds.add(paramPos(fd, 1), "%s takes sql.Tx by value: take tx *sql.Tx, the transaction the runtime begins on the App's database and commits when the handler returns nil (%s)", name, txShape)
		good = false
	case params.Len() > 1 && !shape.tx && isSQLType(params.At(1).Type()):
		ds.add(paramPos(fd, 1), "%s takes a %s: a handler that writes to the database takes tx *sql.Tx, a transaction the runtime begins on the App's database and commits when the handler returns nil (%s)", name, types.TypeString(params.At(1).Type(), qual), txShape)
		good = false
	case misplaced > 0:
		ds.add(paramPos(fd, misplaced), "%s takes a %s as its %s parameter: a handler takes tx *sql.Tx second, right after the context (%s)", name, types.TypeString(params.At(misplaced).Type(), qual), ordinal(misplaced+1), txShape)
		good = false
	case shape.tx && params.Len() == 2:
		ds.add(fd.Type.Params.Closing, "%s takes a *sql.Tx and no message: the message comes after the transaction (%s)", name, txShape)
		good = false
	case params.Len() < m+1 || params.Len() > m+2:
		ds.add(fd.Type.Params.Opening, "%s takes %s: %s", name, count(params.Len(), "parameter"), acceptedShapes)
		good = false
	case !isNamed(params.At(0).Type(), contextPath, "Context"):
		ds.add(paramPos(fd, 0), "%s's first parameter is %s, not context.Context: %s", name, types.TypeString(params.At(0).Type(), qual), acceptedShapes)
		good = false
	default:
		msgType := params.At(m).Type()
		if s, ok := types.Unalias(msgType).(*types.Slice); ok {
			shape.batch, msgType = true, s.Elem()
		}
		if shape.batch && shape.tx {
			ds.add(paramPos(fd, 1), "%s takes a batch and a *sql.Tx: a batch handler cannot run in a transaction of the App's database; take one message (%s), or remove the *sql.Tx and begin your own transaction", name, txShape)
			good = false
		}
		if params.Len() == m+2 {
			md := params.At(m + 1).Type()
			switch {
			case shape.batch && isMetadataSlice(md):
				shape.metadata = true
			case shape.batch:
				ds.add(paramPos(fd, m+1), "%s takes a batch, and its %s parameter is %s, not []runtime.Metadata (the Metadata of each message, in order): %s", name, ordinal(m+2), types.TypeString(md, qual), acceptedBatchShapes)
				good = false
			case isNamed(md, runtimePath, "Metadata"):
				shape.metadata = true
			default:
				ds.add(paramPos(fd, m+1), "%s's %s parameter is %s, not runtime.Metadata: %s", name, ordinal(m+2), types.TypeString(md, qual), acceptedShapes)
				good = false
			}
		}
		msg, pointer, ok := checkMessageType(name, msgType, paramPos(fd, m), pkg, ds)
		shape.msg, shape.pointer = msg, pointer
		good = good && ok
	}
	results := sig.Results()
	switch {
	case results.Len() == 0:
		ds.add(fd.Type.Params.Closing, "%s returns nothing: %s", name, acceptedShapes)
		good = false
	case results.Len() > 2:
		ds.add(fd.Type.Results.Pos(), "%s returns %d results: %s", name, results.Len(), acceptedShapes)
		good = false
	case results.Len() == 2:
		good = checkReply(fd, sig, &shape, pkg, ds) && good
	case shape.batch && isNamed(results.At(0).Type(), runtimePath, "Outcome"):
		ds.add(fd.Type.Results.Pos(), "%s takes a batch and returns runtime.Outcome: a batch handler returns error, nil to acknowledge every message, or a runtime.BatchFailures naming the messages that failed", name)
		good = false
	case isNamed(results.At(0).Type(), runtimePath, "Outcome"):
		shape.outcome = true
	case types.Identical(results.At(0).Type(), types.Universe.Lookup("error").Type()):
	default:
		ds.add(fd.Type.Results.Pos(), "%s returns %s, not error or runtime.Outcome: %s", name, types.TypeString(results.At(0).Type(), qual), acceptedShapes)
		good = false
	}
	return shape, good
}

// count writes n things: "1 parameter", "4 parameters".
func count(n int, thing string) string {
	if n == 1 {
		return "1 " + thing
	}
	return fmt.Sprintf("%d %ss", n, thing)
}

// paramPos returns the position of the type of the i-th parameter.
func paramPos(fd *ast.FuncDecl, i int) token.Pos {
	n := 0
	for _, f := range fd.Type.Params.List {
		names := max(len(f.Names), 1)
		if i < n+names {
			return f.Type.Pos()
		}
		n += names
	}
	return fd.Type.Params.Opening
}

// ordinal writes n in words: "first", "second", ...
func ordinal(n int) string {
	words := []string{"first", "second", "third", "fourth", "fifth"}
	if n >= 1 && n <= len(words) {
		return words[n-1]
	}
	return fmt.Sprintf("%dth", n)
}

// isSQLTxPointer reports whether t is *sql.Tx.
func isSQLTxPointer(t types.Type) bool {
	p, ok := types.Unalias(t).(*types.Pointer)
	return ok && isNamed(p.Elem(), sqlPath, "Tx")
}

// isSQLType reports whether t is a type of package database/sql, or a
// pointer to one: a handler takes none of them but *sql.Tx, second.
func isSQLType(t types.Type) bool {
	if p, ok := types.Unalias(t).(*types.Pointer); ok {
		t = p.Elem()
	}
	n, ok := types.Unalias(t).(*types.Named)
	return ok && n.Obj().Pkg() != nil && n.Obj().Pkg().Path() == sqlPath
}

// isMetadataSlice reports whether t is []runtime.Metadata.
func isMetadataSlice(t types.Type) bool {
	s, ok := types.Unalias(t).(*types.Slice)
	return ok && isNamed(s.Elem(), runtimePath, "Metadata")
}

// isNamed reports whether t is the named type path.name (not a pointer to it).
func isNamed(t types.Type, path, name string) bool {
	n, ok := types.Unalias(t).(*types.Named)
	return ok && n.Obj().Pkg() != nil && n.Obj().Pkg().Path() == path && n.Obj().Name() == name
}

// hasInvalid reports whether a parameter or result type of sig did not type
// check.
func hasInvalid(sig *types.Signature) bool {
	for _, tuple := range []*types.Tuple{sig.Params(), sig.Results()} {
		for v := range tuple.Variables() {
			if containsInvalid(v.Type()) {
				return true
			}
		}
	}
	return false
}

// containsInvalid reports whether t is or points to an invalid type.
func containsInvalid(t types.Type) bool {
	switch t := types.Unalias(t).(type) {
	case *types.Basic:
		return t.Kind() == types.Invalid
	case *types.Pointer:
		return containsInvalid(t.Elem())
	case *types.Slice:
		return containsInvalid(t.Elem())
	}
	return false
}

// qualifier writes types of other packages with their package's name, as
// the source does (orders.Order), and those of pkg unqualified.
func qualifier(pkg *types.Package) types.Qualifier {
	return func(p *types.Package) string {
		if p == pkg {
			return ""
		}
		return p.Name()
	}
}
