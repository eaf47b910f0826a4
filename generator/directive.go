package generator

import (
	"fmt"
	"go/ast"
	"go/token"
	"slices"
	"strconv"
	"strings"
	"unicode"
)

// The directives streamgen reads: //stream:subscriber on a function or
// method, //stream:publisher on a type declaration.
const (
	directiveTool = "stream"
	directiveName = "subscriber"
	directive     = directiveTool + ":" + directiveName

	publisherName      = "publisher"
	publisherDirective = directiveTool + ":" + publisherName
)

// annotation is one //stream:subscriber directive, parsed.
type annotation struct {
	// slash is the position of the directive's "//".
	slash token.Pos
	// name is the subscription name; namePos the position of its quote.
	name    string
	namePos token.Pos
	// args are the key=value arguments, in the order written.
	args []keyArg
	// fields are the values of args, parsed.
	fields fields
	// bad lists the keys written with a value that could not be used; they
	// were reported already.
	bad []string
}

// markBad records that key was written with a value that was reported.
func (a *annotation) markBad(key string) { a.bad = append(a.bad, key) }

// isBad reports whether key was written with a value that was reported.
func (a *annotation) isBad(key string) bool {
	for _, k := range a.bad {
		if k == key {
			return true
		}
	}
	return false
}

// keyArg is one key=value argument of an annotation.
type keyArg struct {
	key, value string
	pos        token.Pos
}

// arg returns the argument that sets key, or nil.
func (a *annotation) arg(key string) *keyArg {
	for i := range a.args {
		if a.args[i].key == key {
			return &a.args[i]
		}
	}
	return nil
}

// annotatedFunc is a function or method and one annotation on it.
type annotatedFunc struct {
	fn  *ast.FuncDecl
	ann *annotation
}

// scanFile finds the //stream:subscriber annotations of a file and parses
// them. Directives in the wrong place (on a type, inside a body, detached
// from a function by a blank line) and misspelt directives are reported.
func scanFile(file *ast.File, ds *diagnostics) []annotatedFunc {
	funcDoc := map[*ast.Comment]*ast.FuncDecl{}
	for _, decl := range file.Decls {
		if fd, ok := decl.(*ast.FuncDecl); ok && fd.Doc != nil {
			for _, c := range fd.Doc.List {
				funcDoc[c] = fd
			}
		}
	}
	var out []annotatedFunc
	for _, group := range file.Comments {
		for _, c := range group.List {
			d, ok := ast.ParseDirective(c.Slash, c.Text)
			if !ok {
				checkSpacedDirective(c, ds)
				continue
			}
			if !checkDirectiveName(d, ds) {
				continue
			}
			fd := funcDoc[c]
			if fd == nil {
				ds.add(c.Slash, "//%s must be in the doc comment of a function or method, directly above func Name(ctx context.Context, msg T) error with no blank line between", directive)
				continue
			}
			if ann := parseAnnotation(d, ds); ann != nil {
				out = append(out, annotatedFunc{fn: fd, ann: ann})
			}
		}
	}
	return out
}

// checkDirectiveName reports a //stream: directive other than
// //stream:subscriber and //stream:publisher, and a //xxx:subscriber or
// //xxx:publisher whose tool looks like a typo of stream. It returns true
// for //stream:subscriber; scanPublishers reads //stream:publisher.
func checkDirectiveName(d ast.Directive, ds *diagnostics) bool {
	names := []string{directiveName, publisherName}
	if d.Tool == directiveTool {
		switch {
		case d.Name == directiveName:
			return true
		case d.Name == publisherName:
			return false
		case strings.HasPrefix(d.Name, directiveName):
			ds.add(d.Slash, "//%s must be followed by a space and the quoted subscription name: //%s \"jobs\"", directive, directive)
			return false
		case strings.HasPrefix(d.Name, publisherName):
			ds.add(d.Slash, "//%s must be followed by a space and its keys: //%s exchange=orders routing_key=order.placed", publisherDirective, publisherDirective)
			return false
		}
		if guess := closest(d.Name, names); guess != "" {
			ds.add(d.Slash, "unknown directive %s:%s; did you mean %s:%s?", d.Tool, d.Name, directiveTool, guess)
		} else {
			ds.add(d.Slash, "unknown directive %s:%s: the streamgen directives are //%s and //%s", d.Tool, d.Name, directive, publisherDirective)
		}
		return false
	}
	if slices.Contains(names, d.Name) && closest(d.Tool, []string{directiveTool}) != "" {
		ds.add(d.Slash, "unknown directive %s:%s; did you mean %s:%s?", d.Tool, d.Name, directiveTool, d.Name)
	}
	return false
}

// checkSpacedDirective reports "// stream:subscriber ...": with the space it
// is an ordinary comment that Go tools (and streamgen) would ignore.
func checkSpacedDirective(c *ast.Comment, ds *diagnostics) {
	text, ok := strings.CutPrefix(c.Text, "//")
	if !ok || !strings.HasPrefix(text, " ") {
		return
	}
	text = strings.TrimLeft(text, " \t")
	switch {
	case text == directive || strings.HasPrefix(text, directive+" \""):
		ds.add(c.Slash, "a directive has no space after //: write //%s", directive)
	case strings.HasPrefix(text, publisherDirective+" ") && strings.Contains(text, "="):
		ds.add(c.Slash, "a directive has no space after //: write //%s", publisherDirective)
	}
}

// methodName writes a method as its method expression does: (*T).Name or
// T.Name.
func methodName(fd *ast.FuncDecl) string {
	recv := "?"
	if len(fd.Recv.List) > 0 {
		recv = recvString(fd.Recv.List[0].Type)
	}
	if strings.HasPrefix(recv, "*") {
		return fmt.Sprintf("(%s).%s", recv, fd.Name.Name)
	}
	return recv + "." + fd.Name.Name
}

// recvString writes a receiver type expression.
func recvString(e ast.Expr) string {
	switch e := e.(type) {
	case *ast.StarExpr:
		return "*" + recvString(e.X)
	case *ast.Ident:
		return e.Name
	case *ast.IndexExpr:
		return recvString(e.X) + "[...]"
	case *ast.IndexListExpr:
		return recvString(e.X) + "[...]"
	case *ast.ParenExpr:
		return recvString(e.X)
	}
	return "?"
}

// parseAnnotation reads the arguments of a //stream:subscriber directive:
// the quoted subscription name, then key=value pairs. Every problem is
// reported; nil is returned when the name is missing.
func parseAnnotation(d ast.Directive, ds *diagnostics) *annotation {
	args, err := d.ParseArgs()
	if err != nil {
		ds.add(d.ArgsPos, "%v: quote the subscription name with \"...\" and write the other arguments as key=value without spaces", err)
		return nil
	}
	quoted := func(a ast.DirectiveArg) bool {
		i := int(a.Pos - d.ArgsPos)
		return i >= 0 && i < len(d.Args) && (d.Args[i] == '"' || d.Args[i] == '`')
	}
	raw := func(a ast.DirectiveArg) string {
		i := int(a.Pos - d.ArgsPos)
		rest := d.Args[i:]
		if j := strings.IndexFunc(rest, unicode.IsSpace); j >= 0 {
			rest = rest[:j]
		}
		return rest
	}
	if len(args) == 0 {
		ds.add(d.Slash, "//%s has no subscription name: write it quoted, as in //%s \"jobs\"", directive, directive)
		return nil
	}
	ann := &annotation{slash: d.Slash}
	first := args[0]
	switch {
	case quoted(first):
		ann.name, ann.namePos = first.Arg, first.Pos
		args = args[1:]
	case strings.Contains(first.Arg, "="):
		ds.add(first.Pos, "//%s has no subscription name: write it quoted before the keys, as in //%s \"jobs\" %s", directive, directive, first.Arg)
		return nil
	default:
		ds.add(first.Pos, "the subscription name must be a quoted string: write //%s %q", directive, first.Arg)
		return nil
	}
	seen := map[string]token.Pos{}
	for i := 0; i < len(args); i++ {
		a := args[i]
		text := raw(a)
		if n := spacedEquals(args, i, raw); n > 0 {
			// "max_attempts = 3": one key=value written with spaces. Say so
			// once, and read it as written without them.
			parts := []string{text}
			for _, b := range args[i+1 : i+1+n] {
				parts = append(parts, raw(b))
			}
			text = strings.Join(parts, "")
			ds.add(a.Pos, "%q has spaces around =: write %s, without spaces", strings.Join(parts, " "), text)
			i += n
		} else if quoted(a) {
			ds.add(a.Pos, "unexpected quoted argument %q: the name comes first and only once; write the other arguments as key=value", a.Arg)
			continue
		}
		key, value, hasValue := strings.Cut(text, "=")
		spec, known := lookupKey(key)
		if !known {
			switch guess := closest(key, keyNames()); {
			case key == "":
				ds.add(a.Pos, "%q has no key before =: write key=value without spaces, such as max_attempts=5", text)
			case guess != "":
				ds.add(a.Pos, "unknown key %s; did you mean %s?", key, guess)
				// The key it stands for has no usable value either: checks
				// that depend on it would only repeat this error.
				ann.markBad(guess)
			case hasValue:
				ds.add(a.Pos, "unknown key %s: the keys are %s", key, strings.Join(keyNames(), ", "))
			default:
				ds.add(a.Pos, "unexpected argument %s: after the quoted name come key=value pairs, such as max_attempts=5", key)
			}
			continue
		}
		if !hasValue {
			ds.add(a.Pos, "%s needs a value: write it as %s", key, spec.example)
			ann.markBad(key)
			continue
		}
		if prev, dup := seen[key]; dup {
			ds.addRelated(a.Pos, prev, "the first is", "%s is set twice in one annotation: keep one", key)
			continue
		}
		seen[key] = a.Pos
		valuePos := a.Pos + token.Pos(len(key)+1)
		if strings.HasPrefix(value, "\"") || strings.HasPrefix(value, "`") {
			v, err := strconv.Unquote(value)
			if err != nil {
				ds.add(valuePos, "bad quoted value for %s: write it as %s", key, spec.example)
				ann.markBad(key)
				continue
			}
			value = v
		}
		if msg := ann.fields.set(key, value); msg != "" {
			ds.add(valuePos, "%s", msg)
			ann.markBad(key)
			continue
		}
		ann.args = append(ann.args, keyArg{key: key, value: value, pos: a.Pos})
	}
	return ann
}

// spacedEquals returns how many arguments after args[i] belong to it
// because the = of a key=value is written with spaces around it: 2 for
// "key = value", 1 for "key =value" and "key= value", else 0. raw returns
// an argument as written.
func spacedEquals(args []ast.DirectiveArg, i int, raw func(ast.DirectiveArg) string) int {
	if i+1 >= len(args) {
		return 0
	}
	text, next := raw(args[i]), raw(args[i+1])
	switch {
	case strings.Contains(text, "="):
		// "key= value", where value is not a key=value of its own.
		if strings.HasSuffix(text, "=") && strings.Count(text, "=") == 1 && !strings.Contains(next, "=") {
			return 1
		}
	case next == "=" && i+2 < len(args) && !strings.Contains(raw(args[i+2]), "="):
		return 2
	case strings.HasPrefix(next, "=") && len(next) > 1:
		return 1
	}
	return 0
}
