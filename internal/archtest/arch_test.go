package archtest

import (
	"bufio"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

const module = "github.com/stela-dev/stela/"

// row is one line of ARCHITECTURE.md's table.
type row struct {
	pkg     string          // a package, or a folder ending in "/..."
	allowed map[string]bool // packages (or folders ending in "/...") it may import
	used    map[string]bool // allowances some package of the row uses
}

// covers reports whether pattern (a package or "dir/...") names pkg.
func covers(pattern, pkg string) bool {
	if dir, ok := strings.CutSuffix(pattern, "/..."); ok {
		return pkg == dir || strings.HasPrefix(pkg, dir+"/")
	}
	return pattern == pkg
}

// backticked returns the `…` spans of s.
func backticked(s string) []string {
	var out []string
	for {
		_, rest, ok := strings.Cut(s, "`")
		if !ok {
			return out
		}
		name, after, ok := strings.Cut(rest, "`")
		if !ok {
			return out
		}
		out = append(out, name)
		s = after
	}
}

func readTable(t *testing.T) []*row {
	t.Helper()
	f, err := os.Open(filepath.Join("..", "..", "ARCHITECTURE.md"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var rows []*row
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		cells := strings.Split(strings.Trim(strings.TrimSpace(sc.Text()), "|"), "|")
		if len(cells) != 3 {
			continue
		}
		names := backticked(cells[0])
		if len(names) != 1 {
			continue // the header and its rule
		}
		r := &row{pkg: names[0], allowed: map[string]bool{}, used: map[string]bool{}}
		for _, a := range backticked(cells[2]) {
			r.allowed[a] = true
		}
		rows = append(rows, r)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if len(rows) < 10 {
		t.Fatalf("ARCHITECTURE.md: found %d rows in the package table", len(rows))
	}
	return rows
}

// TestArchitectureTable fails when a package of the module has no row in
// ARCHITECTURE.md, imports a package of the module its row does not allow,
// or when a row names no package or allows an import none of its packages
// makes: the table and `go list` say the same.
func TestArchitectureTable(t *testing.T) {
	rows := readTable(t)
	out, err := exec.Command("go", "list", "-json=ImportPath,Imports", module+"...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	dec := json.NewDecoder(strings.NewReader(string(out)))
	matched := map[*row]bool{}
	for dec.More() {
		var p struct {
			ImportPath string
			Imports    []string
		}
		if err := dec.Decode(&p); err != nil {
			t.Fatal(err)
		}
		pkg := strings.TrimPrefix(p.ImportPath, module)
		// The most specific row: an exact one before a folder's.
		var r *row
		for _, c := range rows {
			switch {
			case c.pkg == pkg:
				r = c
			case covers(c.pkg, pkg) && (r == nil || r.pkg != pkg && len(c.pkg) > len(r.pkg)):
				r = c
			}
		}
		if r == nil {
			t.Errorf("ARCHITECTURE.md has no row for %s (imports %v)", pkg, inModule(p.Imports))
			continue
		}
		matched[r] = true
		for _, imp := range inModule(p.Imports) {
			ok := false
			for a := range r.allowed {
				if covers(a, imp) {
					ok, r.used[a] = true, true
				}
			}
			if !ok {
				t.Errorf("%s imports %s, which its row in ARCHITECTURE.md (%s) does not allow", pkg, imp, r.pkg)
			}
		}
	}
	for _, r := range rows {
		if !matched[r] {
			t.Errorf("ARCHITECTURE.md has a row for %s, which is no package of the module", r.pkg)
			continue
		}
		var unused []string
		for a := range r.allowed {
			if !r.used[a] {
				unused = append(unused, a)
			}
		}
		sort.Strings(unused)
		if len(unused) > 0 {
			t.Errorf("ARCHITECTURE.md allows %s to import %v, which it does not: remove them", r.pkg, unused)
		}
	}
}

// inModule returns the imports of this module, without its prefix.
func inModule(imports []string) []string {
	var out []string
	for _, i := range imports {
		if p, ok := strings.CutPrefix(i, module); ok {
			out = append(out, p)
		}
	}
	return out
}
