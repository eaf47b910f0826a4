package generator

import (
	"fmt"
	"go/token"
	"go/types"
	"strings"
	"unicode"

	"github.com/streamgen/streamgen/runtime"
)

// mountName is the name of the generated entry point.
const mountName = "Mount"

// guardName is the name of the type that pins a handler's signature: a
// compile error that mentions it tells the reader what to do.
// streamgen_Work_changed_run_go_generate for the function Work,
// streamgen_Service_Work_changed_run_go_generate for the method
// Service.Work.
func guardName(h *handler) string {
	return "streamgen_" + strings.ReplaceAll(h.name(), ".", "_") + "_changed_run_go_generate"
}

// recvParamName is the name of Mount's parameter for a receiver type: the
// type's name with its leading capitals in lower case (Service → service,
// HTTPServer → httpServer), or recv and the name when that is a keyword.
func recvParamName(typeName string) string {
	runes := []rune(typeName)
	n := 0
	for n < len(runes) && unicode.IsUpper(runes[n]) {
		n++
	}
	if n > 1 && n < len(runes) {
		n-- // the last capital starts the next word
	}
	for i := range n {
		runes[i] = unicode.ToLower(runes[i])
	}
	name := string(runes)
	if token.IsKeyword(name) {
		return "recv" + typeName
	}
	return name
}

// andList writes "a", "a and b", "a, b and c".
func andList(items []string) string {
	if len(items) < 2 {
		return strings.Join(items, "")
	}
	return strings.Join(items[:len(items)-1], ", ") + " and " + items[len(items)-1]
}

// plural returns one or many as n is 1 or not.
func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// camel turns a subscription or message type name into an identifier part:
// "jobs.urgent" → "JobsUrgent", "order-events" → "OrderEvents".
func camel(s string) string {
	var b strings.Builder
	upper := true
	for _, r := range s {
		if !unicode.IsLetter(r) && !unicode.IsDigit(r) {
			upper = true
			continue
		}
		if upper {
			r = unicode.ToUpper(r)
			upper = false
		}
		b.WriteRune(r)
	}
	return b.String()
}

// publisherCandidates returns the names the typed publisher of h may take,
// from the plainest: Publish<Type>, Publish<Type>To<Subscription>,
// Publish<WireType>To<Subscription>. base is the type's name as the
// publisher shows it: its Go name, qualified by its package's name when
// another message type of the package has the same name.
func publisherCandidates(h *handler, base string) []string {
	to := "To" + camel(h.ann.name)
	out := []string{"Publish" + base, "Publish" + base + to}
	if w := camel(h.wire); w != "" && w != base && w != h.shape.msg.Obj().Name() {
		out = append(out, "Publish"+w+to)
	}
	return out
}

// needsPublisher reports whether h gets a typed publisher of its own, to
// its subscription's queue by name: not when the subscription is bound to
// an exchange, since a message published to the queue would go around the
// exchange and the other queues bound to it; nor when a //stream:publisher
// directive sends h's type, under h's wire type, to that queue already;
// nor when h takes every message type (a runtime.Delivery).
func (m *model) needsPublisher(h *handler, bound map[string]bool) bool {
	if bound[h.ann.name] || h.every() {
		return false
	}
	for _, p := range m.usableDeclared() {
		if p.named == h.shape.msg && p.wire == h.wire && p.to.Exchange == "" && p.to.Key == h.ann.name {
			return false
		}
	}
	return true
}

// boundToExchange returns the subscriptions of m that are bound to an
// exchange, by name.
func (m *model) boundToExchange() map[string]bool {
	bound := map[string]bool{}
	for _, s := range m.subs {
		if s.rs != nil && s.rs.Exchange != "" {
			bound[s.name] = true
		}
	}
	return bound
}

// checkDeclaredQueues reports each //stream:publisher queue= that names a
// subscription of the package bound to an exchange: what it sends would go
// around the exchange, and the other queues bound to it would never see it.
func (m *model) checkDeclaredQueues(ds *diagnostics) {
	for _, p := range m.usableDeclared() {
		q := p.arg("queue")
		if q == nil || p.broker == runtime.ZeroMQ {
			continue
		}
		for _, s := range m.subs {
			if s.name != q.value || s.rs == nil || s.rs.Exchange == "" {
				continue
			}
			fix := "exchange=" + s.rs.Exchange
			switch {
			case s.rs.ExchangeKind() == runtime.FanoutExchange:
			case len(s.rs.Bindings) == 1 && !strings.ContainsAny(s.rs.Bindings[0], "*#"):
				fix += " routing_key=" + s.rs.Bindings[0]
			default:
				fix += " routing_key=<key>"
			}
			ds.addRelated(q.pos, s.handlers[0].ann.namePos, "the subscription is",
				"queue=%s would publish around the exchange %s that subscription %q is bound to, and the other queues bound to it would not get the message: publish through the exchange with %s", q.value, s.rs.Exchange, s.name, fix)
		}
	}
}

// namePublishers gives each usable handler that needs a typed publisher
// (see needsPublisher) its name. A Go type consumed once gets
// Publish<Type>; one consumed on several
// subscriptions gets Publish<Type>To<Subscription>; one consumed under
// several wire types on one subscription gets
// Publish<WireType>To<Subscription>. An imported type whose name another
// message type has too is qualified by its package: PublishOrdersOrder.
// Names that would still collide move to the next candidate; when none is
// left, the collision is reported.
func (m *model) namePublishers(ds *diagnostics) {
	var hs []*handler
	bound := m.boundToExchange()
	for _, h := range m.handlers {
		if h.ok && h.ann.name != "" && !h.duplicate && m.needsPublisher(h, bound) {
			hs = append(hs, h)
		}
	}
	// How often each Go type is consumed, and on how many subscriptions;
	// which distinct types share a name.
	uses := map[*types.TypeName]int{}
	subsOf := map[*types.TypeName]map[string]bool{}
	byName := map[string][]*types.TypeName{}
	for _, h := range hs {
		obj := h.shape.msg.Obj()
		if subsOf[obj] == nil {
			subsOf[obj] = map[string]bool{}
			byName[obj.Name()] = append(byName[obj.Name()], obj)
		}
		subsOf[obj][h.ann.name] = true
		uses[obj]++
	}
	level := make([]int, len(hs))
	cands := make([][]string, len(hs))
	for i, h := range hs {
		obj := h.shape.msg.Obj()
		base := obj.Name()
		if len(byName[obj.Name()]) > 1 && obj.Pkg() != m.pkg {
			base = exportedName(camel(obj.Pkg().Name())) + base
		}
		cands[i] = publisherCandidates(h, base)
		switch {
		case len(subsOf[obj]) < uses[obj]:
			level[i] = len(cands[i]) - 1 // several wire types on one subscription
		case len(subsOf[obj]) > 1:
			level[i] = 1
		}
	}
	// The publishers //stream:publisher declares keep Publish<Type>; the
	// publishers of consumed types move away from their names.
	declaredAs := map[string]*declared{}
	for _, p := range m.usableDeclared() {
		declaredAs[p.name] = p
	}
	for {
		count := map[string]int{}
		for name := range declaredAs {
			count[name]++
		}
		for i := range hs {
			count[cands[i][level[i]]]++
		}
		moved := false
		for i := range hs {
			if count[cands[i][level[i]]] > 1 && level[i]+1 < len(cands[i]) {
				level[i]++
				moved = true
			}
		}
		if !moved {
			break
		}
	}
	first := map[string]*handler{}
	for i, h := range hs {
		h.publisher = cands[i][level[i]]
		if p := declaredAs[h.publisher]; p != nil {
			ds.addRelated(h.ann.namePos, p.slash, "the directive is",
				"the typed publisher of %s would be named %s, as is the one //%s declares for %s: give the handler another type=, or rename one of the types", h.name(), h.publisher, publisherDirective, p.named.Obj().Name())
			continue
		}
		if prev := first[h.publisher]; prev != nil {
			ds.addRelated(h.ann.namePos, prev.ann.namePos, "the other is for "+prev.name(),
				"two typed publishers would be named %s: give one handler another type=", h.publisher)
			continue
		}
		first[h.publisher] = h
	}
}

// checkCollisions reports generated identifiers that the package declares
// already.
func (m *model) checkCollisions(ds *diagnostics) {
	scope := m.pkg.Scope()
	clash := func(name string, at *handler, what string) {
		obj := scope.Lookup(name)
		if obj == nil {
			return
		}
		ds.addRelated(at.ann.namePos, obj.Pos(), "yours is declared",
			"streamgen generates %s %s, and the package declares %s already: rename yours", what, name, name)
	}
	if len(m.handlers) > 0 {
		clash(mountName, m.handlers[0], "the function")
	}
	// publishers are the typed publishers' names, each also taken with
	// Async after it.
	publishers := map[string]bool{}
	for _, p := range m.usableDeclared() {
		publishers[p.name] = true
	}
	for _, h := range m.handlers {
		if h.publisher != "" {
			publishers[h.publisher] = true
		}
	}
	twinClash := func(name string, pos token.Pos) {
		if publishers[name+"Async"] {
			ds.add(pos, "streamgen generates the typed publishers %s and %sAsync, and another typed publisher would be named %sAsync too: give one handler another type=, or rename one of the types", name, name, name)
		}
	}
	for _, p := range m.usableDeclared() {
		for _, name := range []string{p.name, p.name + "Async"} {
			if obj := scope.Lookup(name); obj != nil {
				ds.addRelated(p.slash, obj.Pos(), "yours is declared",
					"streamgen generates the typed publisher %s for this //%s, and the package declares %s already: rename yours", name, publisherDirective, name)
			}
		}
		twinClash(p.name, p.slash)
	}
	seen := map[string]bool{}
	guardOf := map[string]*handler{}
	for _, h := range m.handlers {
		if h.publisher != "" && !seen[h.publisher] {
			seen[h.publisher] = true
			clash(h.publisher, h, "the typed publisher")
			clash(h.publisher+"Async", h, "the typed publisher")
			twinClash(h.publisher, h.ann.namePos)
		}
		g := guardName(h)
		if prev := guardOf[g]; prev != nil && prev.fn != h.fn {
			ds.addRelated(h.ann.namePos, prev.ann.namePos, "the other is for "+prev.name(),
				"the signature guards of %s and %s would both be named %s: rename one of them", prev.name(), h.name(), g)
		} else if prev == nil {
			guardOf[g] = h
		}
		if !seen[g] {
			seen[g] = true
			clash(g, h, "the type")
		}
	}
}

// generatedNames returns every package-level identifier the generated file
// declares, so that references to them from the user's code are not
// reported while the old file is left out of the load.
func (m *model) generatedNames() map[string]bool {
	names := map[string]bool{mountName: true}
	for _, p := range m.usableDeclared() {
		names[p.name] = true
		names[p.name+"Async"] = true
	}
	for _, h := range m.handlers {
		names[guardName(h)] = true
		if h.publisher != "" {
			names[h.publisher] = true
			names[h.publisher+"Async"] = true
		}
	}
	return names
}

// nameSet is a set of taken names: those of an enclosing scope, shared and
// read only, and a function's own.
type nameSet struct {
	outer map[string]bool
	own   map[string]bool
}

// freshName returns base, or base with a number appended, whichever is not
// taken; and records it as taken.
func freshName(base string, taken nameSet) string {
	name := base
	for i := 2; taken.outer[name] || taken.own[name]; i++ {
		name = fmt.Sprintf("%s%d", base, i)
	}
	taken.own[name] = true
	return name
}
