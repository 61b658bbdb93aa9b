// Command binsize says what a Go binary is made of: its sections, and the
// modules and packages whose symbols (code, read-only data, data) take the
// most bytes. It reads an unstripped ELF binary (built without -s -w: the
// symbol table is what it counts) and its build information.
//
//	go run ./internal/tools/binsize [-top 15] path/to/binary
//
// scripts/ci/size-budget.sh prints it for a Lambda function over its
// budget. The symbol sizes add up to the code and data; the pclntab (the
// runtime's tables of every function, about 0.8 bytes per byte of code)
// and the other sections are listed apart.
package main

import (
	"debug/buildinfo"
	"debug/elf"
	"flag"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
)

func main() {
	top := flag.Int("top", 15, "how many modules and packages to list")
	flag.Parse()
	if flag.NArg() != 1 {
		fmt.Fprintln(os.Stderr, "usage: binsize [-top N] binary")
		os.Exit(2)
	}
	if err := run(os.Stdout, flag.Arg(0), *top); err != nil {
		fmt.Fprintln(os.Stderr, "binsize:", err)
		os.Exit(1)
	}
}

// symbol is one sized symbol of the binary.
type symbol struct {
	name string
	size uint64
}

func run(w io.Writer, path string, top int) error {
	f, err := elf.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	bi, err := buildinfo.ReadFile(path)
	if err != nil {
		return err
	}
	syms, err := f.Symbols()
	if err != nil {
		return fmt.Errorf("%s has no symbol table (built with -ldflags=-s?): %w", path, err)
	}
	counted := map[string]bool{".text": true, ".rodata": true, ".noptrdata": true, ".data": true}
	var in []symbol
	for _, s := range syms {
		if int(s.Section) >= len(f.Sections) || s.Section == elf.SHN_UNDEF {
			continue
		}
		if counted[f.Sections[s.Section].Name] && s.Size > 0 {
			in = append(in, symbol{s.Name, s.Size})
		}
	}
	mods := []string{bi.Main.Path}
	for _, d := range bi.Deps {
		mods = append(mods, d.Path)
	}
	fmt.Fprintf(w, "sections (bytes in the file):\n")
	for _, s := range f.Sections {
		if s.Type != elf.SHT_NOBITS && s.Size > 0 && !strings.HasPrefix(s.Name, ".debug") && s.Name != ".symtab" && s.Name != ".strtab" {
			fmt.Fprintf(w, "  %10d  %s\n", s.Size, s.Name)
		}
	}
	byMod, byPkg, total := attribute(in, mods)
	fmt.Fprintf(w, "symbols by module (%d bytes of code and data in all):\n", total)
	list(w, byMod, top)
	fmt.Fprintf(w, "symbols by package:\n")
	list(w, byPkg, top)
	return nil
}

// attribute adds up the symbols by package and by module (the longest
// module path that prefixes the symbol; "std" for the standard library,
// "(runtime tables)" for the linker's go:* symbols).
func attribute(syms []symbol, modules []string) (byMod, byPkg map[string]uint64, total uint64) {
	mods := append([]string(nil), modules...)
	sort.Slice(mods, func(i, j int) bool { return len(mods[i]) > len(mods[j]) })
	byMod, byPkg = map[string]uint64{}, map[string]uint64{}
	for _, s := range syms {
		name := trimKind(s.name)
		pkg, mod := packageOf(name), "std"
		if strings.HasPrefix(name, "go:") || pkg == "" {
			mod = "(runtime tables)"
		}
		for _, m := range mods {
			if strings.HasPrefix(name, m+"/") {
				mod = m
				break
			}
			if strings.HasPrefix(name, m+".") { // the module's root package (its path may hold dots)
				mod, pkg = m, m
				break
			}
		}
		byMod[mod] += s.size
		byPkg[pkg] += s.size
		total += s.size
	}
	return byMod, byPkg, total
}

// trimKind drops the prefixes of the linker's generated symbols of a type.
func trimKind(sym string) string {
	for _, p := range []string{"type:.eq.", "type:.hash.", "type:", "go:itab.*", "go:itab."} {
		sym = strings.TrimPrefix(sym, p)
	}
	return sym
}

// packageOf is the import path of a symbol: "net/http.(*Client).Do" →
// "net/http", "go:func.*" → "go:func" (a path whose last element holds a
// dot is cut there: attribute knows the modules' paths).
func packageOf(sym string) string {
	if i := strings.IndexAny(sym, "[("); i >= 0 {
		sym = sym[:i]
	}
	slash := strings.LastIndexByte(sym, '/')
	if dot := strings.IndexByte(sym[slash+1:], '.'); dot >= 0 {
		return sym[:slash+1+dot]
	}
	return sym
}

func list(w io.Writer, m map[string]uint64, top int) {
	type kv struct {
		k string
		v uint64
	}
	var l []kv
	for k, v := range m {
		l = append(l, kv{k, v})
	}
	sort.Slice(l, func(i, j int) bool { return l[i].v > l[j].v || l[i].v == l[j].v && l[i].k < l[j].k })
	for i, e := range l {
		if i == top {
			break
		}
		fmt.Fprintf(w, "  %10d  %s\n", e.v, e.k)
	}
}
