package main

import "testing"

func TestPackageOf(t *testing.T) {
	for sym, want := range map[string]string{
		"net/http.(*Client).Do":                       "net/http",
		"runtime.mallocgc":                            "runtime",
		"github.com/aws/aws-sdk-go-v2/service/s3.New": "github.com/aws/aws-sdk-go-v2/service/s3",
		"slices.SortFunc[go.shape.[]string]":          "slices",
		"go:func.*":                                   "go:func",
		"gopkg.in/yaml.v3.Marshal":                    "gopkg.in/yaml",
	} {
		if got := packageOf(sym); got != want {
			t.Errorf("packageOf(%q) = %q, want %q", sym, got, want)
		}
	}
}

func TestAttributeToTheLongestModule(t *testing.T) {
	byMod, byPkg, total := attribute([]symbol{
		{"github.com/aws/aws-sdk-go-v2/aws.String", 10},
		{"github.com/aws/aws-sdk-go-v2/service/s3.New", 100},
		{"github.com/aws/aws-sdk-go-v2/service/s3/types.X", 5},
		{"net/http.Get", 7},
		{"go:func.*", 3},
		{"type:.eq.github.com/stela-dev/stela/core.Event", 20},
		{"gopkg.in/yaml.v3.Marshal", 1},
	}, []string{"github.com/aws/aws-sdk-go-v2", "github.com/aws/aws-sdk-go-v2/service/s3", "github.com/stela-dev/stela", "gopkg.in/yaml.v3"})
	if total != 146 || byMod["github.com/stela-dev/stela"] != 20 || byPkg["github.com/stela-dev/stela/core"] != 20 ||
		byMod["gopkg.in/yaml.v3"] != 1 || byPkg["gopkg.in/yaml.v3"] != 1 || byMod["github.com/aws/aws-sdk-go-v2/service/s3"] != 105 || byMod["github.com/aws/aws-sdk-go-v2"] != 10 ||
		byMod["std"] != 7 || byMod["(runtime tables)"] != 3 || byPkg["github.com/aws/aws-sdk-go-v2/service/s3/types"] != 5 {
		t.Errorf("by module %v, by package %v, total %d", byMod, byPkg, total)
	}
}
