// The size budget is checked here, so that growth shows in make test
// instead of drifting while the linter stays green: no non-test .go file
// over maxFileLines lines, no function over maxFuncLines lines (from its
// func line to its closing brace). Generated files are exempt.
//
// budget_offenders.txt lists what is over budget today, one `path` or
// `path:Func` (`path:Type.Method` for a method) per line; '#' starts a
// comment. The list may only shrink: an entry that is no longer over
// budget, or names nothing, fails the check until it is removed.
package offlinebox_test

import (
	"bufio"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
)

const (
	maxFileLines = 500
	maxFuncLines = 80
	offendersTxt = "budget_offenders.txt"
)

var generatedMark = regexp.MustCompile(`(?m)^// Code generated .* DO NOT EDIT\.$`)

// overBudget lists every file and function of the tree over its budget,
// keyed as in the offenders list, with the lines it has.
func overBudget(t *testing.T) (over map[string]int, known map[string]bool) {
	t.Helper()
	over, known = map[string]int{}, map[string]bool{}
	fset := token.NewFileSet()
	err := filepath.WalkDir(".", func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			if path != "." && (strings.HasPrefix(name, ".") || name == "testdata" || name == "node_modules") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			return nil
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if generatedMark.Match(src) {
			return nil
		}
		f, err := parser.ParseFile(fset, path, src, parser.SkipObjectResolution)
		if err != nil {
			return fmt.Errorf("parsing %s: %w", path, err)
		}
		rel := filepath.ToSlash(path)
		known[rel] = true
		if n := fset.File(f.Pos()).LineCount(); n > maxFileLines {
			over[rel] = n
		}
		for _, decl := range f.Decls {
			fn, ok := decl.(*ast.FuncDecl)
			if !ok || fn.Body == nil {
				continue
			}
			key := rel + ":" + funcName(fn)
			known[key] = true
			if n := fset.Position(fn.End()).Line - fset.Position(fn.Pos()).Line + 1; n > maxFuncLines {
				over[key] = n
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return over, known
}

// funcName names a function as the offenders list does: Func, or
// Type.Method for a method (pointer or not, type parameters dropped).
func funcName(fn *ast.FuncDecl) string {
	if fn.Recv == nil || len(fn.Recv.List) == 0 {
		return fn.Name.Name
	}
	typ := fn.Recv.List[0].Type
	if star, ok := typ.(*ast.StarExpr); ok {
		typ = star.X
	}
	switch x := typ.(type) {
	case *ast.IndexExpr:
		typ = x.X
	case *ast.IndexListExpr:
		typ = x.X
	}
	if id, ok := typ.(*ast.Ident); ok {
		return id.Name + "." + fn.Name.Name
	}
	return fn.Name.Name
}

func readOffenders(t *testing.T) []string {
	t.Helper()
	f, err := os.Open(offendersTxt)
	if err != nil {
		t.Fatalf("reading the offenders list: %v", err)
	}
	defer f.Close()
	var list []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if i := strings.IndexByte(line, '#'); i >= 0 {
			line = strings.TrimSpace(line[:i])
		}
		if line != "" {
			list = append(list, line)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatalf("reading the offenders list: %v", err)
	}
	return list
}

func TestNoFileOrFunctionIsOverItsSizeBudgetUnlessListed(t *testing.T) {
	over, known := overBudget(t)
	listed := map[string]bool{}
	for _, e := range readOffenders(t) {
		switch {
		case listed[e]:
			t.Errorf("%s lists %s twice", offendersTxt, e)
		case !known[e]:
			t.Errorf("%s lists %s, which names no file or function of the tree: remove it", offendersTxt, e)
		case over[e] == 0:
			t.Errorf("%s is within its budget now: remove it from %s, which may only shrink", e, offendersTxt)
		}
		listed[e] = true
	}
	var keys []string
	for k := range over {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if listed[k] {
			continue
		}
		if strings.Contains(k, ".go:") {
			t.Errorf("%s is %d lines, over the %d a function may have: split it by meaning", k, over[k], maxFuncLines)
		} else {
			t.Errorf("%s is %d lines, over the %d a file may have: split it by meaning", k, over[k], maxFileLines)
		}
	}
}
