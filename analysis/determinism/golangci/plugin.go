// Package golangci registers the determinism analyzer as a golangci-lint
// module plugin named "stelavet". Build a golangci-lint that holds it with
// `golangci-lint custom` and this .custom-gcl.yml:
//
//	version: v2.15.0
//	plugins:
//	  - module: github.com/stela-dev/stela
//	    import: github.com/stela-dev/stela/analysis/determinism/golangci
//	    version: <the Stela version your go.mod requires>
//
// then enable it in .golangci.yml:
//
//	version: "2"
//	linters:
//	  enable: [stelavet]
//	  settings:
//	    custom:
//	      stelavet:
//	        type: module
//	        description: what breaks the replay of Stela workflows
//	issues:
//	  uniq-by-line: false # else golangci-lint keeps one finding per line
//
// The plugin takes no settings. See docs/worker.md, "Determinism rules".
package golangci

import (
	"github.com/golangci/plugin-module-register/register"
	"golang.org/x/tools/go/analysis"

	"github.com/stela-dev/stela/analysis/determinism"
)

// Name is the plugin's name in golangci-lint's configuration.
const Name = "stelavet"

func init() { register.Plugin(Name, New) }

// New returns the plugin; settings must be empty.
func New(settings any) (register.LinterPlugin, error) {
	if settings != nil {
		if _, err := register.DecodeSettings[struct{}](settings); err != nil {
			return nil, err
		}
	}
	return plugin{}, nil
}

type plugin struct{}

// BuildAnalyzers returns the determinism analyzer.
func (plugin) BuildAnalyzers() ([]*analysis.Analyzer, error) {
	return []*analysis.Analyzer{determinism.Analyzer}, nil
}

// GetLoadMode asks for type information: the analyzer resolves calls.
func (plugin) GetLoadMode() string { return register.LoadModeTypesInfo }
