package engine

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"

	"github.com/rocklake/rocklake/engine/duckast"
	"github.com/rocklake/rocklake/types"
)

// functions.tsv classifies every function DuckDB has, by name: a client of
// a sandboxed engine may call only the ones it allows. DuckDB's own guards
// do not cover the class: lock_configuration stops SET but not table
// functions, and has_side_effects does not mark enable_logging, which
// switches logging for every connection of the database.
//
//go:embed functions.tsv
var functionsTSV string

// functionVerdict is one line of functions.tsv.
type functionVerdict struct {
	kinds []string // scalar, aggregate, macro, table, table_macro, pragma
	allow bool
	why   string // what a refused function does
}

var functionCensus = sync.OnceValue(func() map[string]functionVerdict {
	out := map[string]functionVerdict{}
	for _, line := range strings.Split(functionsTSV, "\n") {
		if line == "" || line[0] == '#' {
			continue
		}
		f := strings.Split(line, "\t")
		v := functionVerdict{kinds: strings.Split(f[1], ","), allow: f[2] == "allow"}
		if len(f) > 3 {
			v.why = f[3]
		}
		out[f[0]] = v
	}
	return out
})

// ErrFunctionRefused is returned for a client's statement that calls a
// function clients may not call.
var ErrFunctionRefused = errors.New("function not available to clients")

type refusedFunction struct{ name, why string }

func (r *refusedFunction) Error() string {
	// The "Permission Error" class is DuckDB's for what the sandbox
	// refuses, so that clients see one kind of refusal.
	return fmt.Sprintf("Permission Error: function %s is not available to clients: it %s", r.name, r.why)
}

func (r *refusedFunction) Unwrap() error { return ErrFunctionRefused }

// ErrNoSuchFunction is returned for a client's statement that calls a
// function the census does not know: none DuckDB has.
var ErrNoSuchFunction = errors.New("no such function")

type unknownFunction struct{ name string }

func (u *unknownFunction) Error() string {
	// DuckDB's "Catalog Error" class, as DuckDB says it of a function it
	// lacks, and PostgreSQL's clients get undefined_function (42883) for
	// it: a typo is not a refusal.
	return fmt.Sprintf("Catalog Error: function %s does not exist (it is not one of the functions this server knows: no such function, or one from an extension)", u.name)
}

func (u *unknownFunction) Unwrap() error { return ErrNoSuchFunction }

// verdict is the census's answer for a function name as a query writes it.
// A name the census lacks is refused: the census test holds it to every
// function DuckDB has, so only a function DuckDB does not have (a typo)
// or one an extension would bring is missing, and neither may run.
func verdict(name string) error {
	v, ok := functionCensus()[strings.ToLower(name)]
	switch {
	case !ok:
		return &unknownFunction{name: name}
	case !v.allow:
		return &refusedFunction{name: name, why: v.why}
	}
	return nil
}

// maxQueryDepth bounds how deep query('...') strings may nest.
const maxQueryDepth = 8

// checkFunctions refuses a parse tree that calls a function clients may
// not call, anywhere in it: expressions, window functions, table
// functions, and the statements query() runs from a string, which DuckDB
// parses only when it binds them.
func (e *Engine) checkFunctions(ctx context.Context, tree duckast.Tree, depth int) error {
	var err error
	var walk func(n any)
	walk = func(n any) {
		if err != nil {
			return
		}
		switch n := n.(type) {
		case []any:
			for _, x := range n {
				walk(x)
			}
		case map[string]any:
			if name, ok := n["function_name"].(string); ok {
				// A function registered for clients is called by its bare
				// name; qualified (system.main.current_setting), the name may
				// be DuckDB's function it replaces, which the census judges.
				_, mine := e.clientFuncs.Load(strings.ToLower(name))
				switch {
				case mine && n["schema"] == "" && n["catalog"] == "":
					// registered by the engine's user for its clients
				case strings.EqualFold(name, feedFunction) && n["catalog"] == "" && (n["schema"] == "" || strings.EqualFold(fmt.Sprint(n["schema"]), "main")):
					// the change feed, replaced before DuckDB binds (feed.go)
				default:
					err = verdict(name)
				}
				if err != nil {
					return
				}
				if strings.EqualFold(name, "query") && n["class"] == "FUNCTION" {
					err = e.checkQueryString(ctx, n, depth)
				}
			}
			for _, k := range slices.Sorted(maps.Keys(n)) { // the first refusal, always the same
				walk(n[k])
			}
		}
	}
	walk(map[string]any(tree))
	return err
}

// checkQueryString checks the statement a query() call runs: its argument
// must be a constant string, parsed and checked like the query itself.
func (e *Engine) checkQueryString(ctx context.Context, call map[string]any, depth int) error {
	args := duckast.ExprOf(call).Children
	if depth >= maxQueryDepth {
		return &refusedFunction{name: "query", why: fmt.Sprintf("nests more than %d levels deep here", maxQueryDepth)}
	}
	if len(args) == 0 || args[0] == nil || args[0].Class != "CONSTANT" || args[0].Value == nil {
		return &refusedFunction{name: "query", why: "takes a constant string here, so that the statement it runs can be checked"}
	}
	text, ok := args[0].Value.Raw.(string)
	if !ok {
		return &refusedFunction{name: "query", why: "takes a constant string here, so that the statement it runs can be checked"}
	}
	tree, err := e.serialize(ctx, text)
	if errors.Is(err, duckast.ErrNotSerializable) {
		return checkFunctionWords(text)
	}
	if err != nil {
		return err
	}
	return e.checkFunctions(ctx, tree, depth+1)
}

// checkFunctionWords is the check for a statement DuckDB cannot give as a
// parse tree: any refused function's name anywhere in the text, strings
// included, refuses it. It may refuse a statement that only mentions such
// a name; it never lets one through.
func checkFunctionWords(query string) error {
	folded := types.FoldIdent(query)
	for name, v := range functionCensus() {
		if !v.allow && wordIn(folded, name) {
			return &refusedFunction{name: name, why: v.why}
		}
	}
	return nil
}
