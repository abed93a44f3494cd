// The file map of DESIGN.md is checked against the tree, so that the map
// cannot silently go stale while files move.
//
// Its rules, for whoever edits the map: the first column of each row of
// the table under "## File map" names paths in backticks. A path is read
// from the repository root; one the root does not have is read from the
// directory of the row's first path (so "`redisstore/sequence.go`,
// `lua/sequence.lua`" names redisstore/lua/sequence.lua). A path may end in
// "/" (a directory) or hold a glob ("`redisstore/sync*.go`"), which must
// match something. Every directory holding a Go package has a row that
// names the directory itself or a file directly in it.
package offlinebox_test

import (
	"bufio"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

var backticked = regexp.MustCompile("`([^`]+)`")

// fileMapRows reads the first column of every row of DESIGN.md's file
// map: the paths each row names, in order, and the row's text.
func fileMapRows(t *testing.T) (rows [][]string, lines []string) {
	t.Helper()
	f, err := os.Open("DESIGN.md")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	in := false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "## ") {
			in = line == "## File map"
			continue
		}
		if !in || !strings.HasPrefix(line, "|") {
			continue
		}
		cells := strings.Split(line, "|")
		if len(cells) < 3 {
			continue
		}
		var paths []string
		for _, m := range backticked.FindAllStringSubmatch(cells[1], -1) {
			paths = append(paths, m[1])
		}
		if len(paths) > 0 {
			rows, lines = append(rows, paths), append(lines, line)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if len(rows) == 0 {
		t.Fatal("DESIGN.md has no file map (a table under \"## File map\")")
	}
	return rows, lines
}

// matches lists what path names in the tree (one entry, or a glob's
// matches), as clean slash paths from the root; none when it names nothing.
func matches(path string) []string {
	got, err := filepath.Glob(filepath.FromSlash(strings.TrimSuffix(path, "/")))
	if err != nil {
		return nil
	}
	for i, g := range got {
		got[i] = filepath.ToSlash(g)
	}
	return got
}

// resolve reads path from the root, else from the directory of the row's
// first path.
func resolve(first, path string) []string {
	if got := matches(path); len(got) > 0 || first == "" {
		return got
	}
	base := strings.TrimSuffix(first, "/")
	if fi, err := os.Stat(base); err != nil || !fi.IsDir() {
		base = filepath.ToSlash(filepath.Dir(base))
	}
	return matches(base + "/" + path)
}

func TestEveryPathOfTheDesignFileMapExists(t *testing.T) {
	rows, lines := fileMapRows(t)
	for i, paths := range rows {
		for j, p := range paths {
			first := paths[0]
			if j == 0 {
				first = ""
			}
			if len(resolve(first, p)) == 0 {
				t.Errorf("DESIGN.md file map: `%s` names nothing in the tree (read from the root, or from the directory of the row's first path), in row\n%s", p, lines[i])
			}
		}
	}
}

func TestEveryPackageHasARowInTheDesignFileMap(t *testing.T) {
	rows, _ := fileMapRows(t)
	covered := map[string]bool{}
	for _, paths := range rows {
		for j, p := range paths {
			first := paths[0]
			if j == 0 {
				first = ""
			}
			for _, m := range resolve(first, p) {
				if fi, err := os.Stat(m); err == nil && fi.IsDir() {
					covered[m] = true
				} else {
					covered[filepath.ToSlash(filepath.Dir(m))] = true
				}
			}
		}
	}
	for _, dir := range packageDirs(t) {
		if !covered[dir] {
			t.Errorf("package %s has no row in DESIGN.md's file map: add one naming `%s/` or a file in it", dir, dir)
		}
	}
}

// packageDirs lists the directories below the root holding a Go package
// (a non-test .go file), skipping hidden directories and testdata.
func packageDirs(t *testing.T) []string {
	t.Helper()
	seen := map[string]bool{}
	var dirs []string
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
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
		dir := filepath.ToSlash(filepath.Dir(path))
		if dir != "." && strings.HasSuffix(name, ".go") && !strings.HasSuffix(name, "_test.go") && !seen[dir] {
			seen[dir] = true
			dirs = append(dirs, dir)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return dirs
}

var (
	testName = regexp.MustCompile(`\bTest[A-Z0-9_]\w*`)
	// runPattern ends the text before a name that is a `go test -run`
	// pattern, which names every test it is a prefix of.
	runPattern = regexp.MustCompile(`-run[ =]['"]?\^?$`)
)

func anyPrefixed(names map[string]bool, prefix string) bool {
	for n := range names {
		if strings.HasPrefix(n, prefix) {
			return true
		}
	}
	return false
}

// testFuncs lists the top-level funcs named Test* in every _test.go file.
func testFuncs(t *testing.T) map[string]bool {
	t.Helper()
	names := map[string]bool{}
	fset := token.NewFileSet()
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if path != "." && (strings.HasPrefix(d.Name(), ".") || d.Name() == "node_modules") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return fmt.Errorf("parsing %s: %w", path, err)
		}
		for _, decl := range f.Decls {
			if fn, ok := decl.(*ast.FuncDecl); ok && fn.Recv == nil && strings.HasPrefix(fn.Name.Name, "Test") {
				names[fn.Name.Name] = true
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return names
}

func TestEveryTestTheDocsNameExists(t *testing.T) {
	have := testFuncs(t)
	for _, doc := range []string{"DESIGN.md", "README.md"} {
		src, err := os.ReadFile(doc)
		if err != nil {
			t.Fatal(err)
		}
		for i, line := range strings.Split(string(src), "\n") {
			for _, at := range testName.FindAllStringIndex(line, -1) {
				name := line[at[0]:at[1]]
				if runPattern.MatchString(line[:at[0]]) {
					if !anyPrefixed(have, name) {
						t.Errorf("%s:%d runs %s, which matches no test of the tree", doc, i+1, name)
					}
				} else if !have[name] {
					t.Errorf("%s:%d names %s, which no _test.go file of the tree declares", doc, i+1, name)
				}
			}
		}
	}
}

// ownRowAbove is the size from which a file needs a row of the file map
// that names it alone among Go files (no glob, no directory, no sharing).
const ownRowAbove = 300

func TestEveryLargeFileHasARowOfItsOwnInTheDesignFileMap(t *testing.T) {
	rows, _ := fileMapRows(t)
	own := map[string]bool{}
	for _, paths := range rows {
		var goFiles []string
		exact := true
		for j, p := range paths {
			first := paths[0]
			if j == 0 {
				first = ""
			}
			glob := strings.ContainsAny(p, "*?[")
			for _, m := range resolve(first, p) {
				if fi, err := os.Stat(m); err == nil && fi.IsDir() {
					exact = false
				} else if strings.HasSuffix(m, ".go") {
					goFiles = append(goFiles, m)
					exact = exact && !glob
				}
			}
		}
		if exact && len(goFiles) == 1 {
			own[goFiles[0]] = true
		}
	}
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if path != "." && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata" || d.Name() == "node_modules") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if generatedMark.Match(src) {
			return nil
		}
		rel := filepath.ToSlash(path)
		if n := strings.Count(string(src), "\n"); n > ownRowAbove && !own[rel] {
			t.Errorf("%s is %d lines: give it a row of its own in DESIGN.md's file map (over %d lines, not a glob or a shared row)", rel, n, ownRowAbove)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
