package golangci_test

import (
	"testing"

	"github.com/golangci/plugin-module-register/register"

	"github.com/stela-dev/stela/analysis/determinism"
	"github.com/stela-dev/stela/analysis/determinism/golangci"
)

// TestPluginRegistersTheAnalyzer checks what golangci-lint's module plugin
// system calls: the registered constructor, the analyzers and the load
// mode; unknown settings are refused.
func TestPluginRegistersTheAnalyzer(t *testing.T) {
	newPlugin, err := register.GetPlugin(golangci.Name)
	if err != nil {
		t.Fatal(err)
	}
	for _, settings := range []any{nil, map[string]any{}} {
		p, err := newPlugin(settings)
		if err != nil {
			t.Fatalf("settings %v: %v", settings, err)
		}
		as, err := p.BuildAnalyzers()
		if err != nil || len(as) != 1 || as[0] != determinism.Analyzer {
			t.Fatalf("analyzers %v, %v; want the determinism analyzer", as, err)
		}
		if got := p.GetLoadMode(); got != register.LoadModeTypesInfo {
			t.Fatalf("load mode %q, want %q", got, register.LoadModeTypesInfo)
		}
	}
	if _, err := newPlugin(map[string]any{"strict": true}); err == nil {
		t.Fatal("unknown setting accepted")
	}
}
