package api

import (
	"os"
	"sort"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// openAPIDoc is the part of openapi.yaml the routes are checked against.
type openAPIDoc struct {
	Paths map[string]map[string]struct {
		Security  *[]map[string][]string `yaml:"security"`
		Responses map[string]any         `yaml:"responses"`
	} `yaml:"paths"`
}

func TestOpenAPIDocumentsExactlyTheServedRoutes(t *testing.T) {
	data, err := os.ReadFile("openapi.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var doc openAPIDoc
	if err := yaml.Unmarshal(data, &doc); err != nil {
		t.Fatalf("openapi.yaml does not parse: %v", err)
	}
	documented := map[string]bool{}
	for path, ops := range doc.Paths {
		for method, op := range ops {
			documented[strings.ToUpper(method)+" "+path] = true
			if len(op.Responses) == 0 {
				t.Errorf("%s %s documents no response", method, path)
			}
		}
	}
	s := &Server{}
	served := map[string]bool{}
	for _, rt := range s.routes() {
		key := rt.method + " " + rt.pattern
		served[key] = true
		op := doc.Paths[rt.pattern][strings.ToLower(rt.method)]
		public := op.Security != nil && len(*op.Security) == 0
		if public != rt.public {
			t.Errorf("%s: documented public=%v, served public=%v", key, public, rt.public)
		}
		for _, code := range []string{"401", "429"} {
			if _, ok := op.Responses[code]; !rt.public && !ok {
				t.Errorf("%s needs a token but documents no %s", key, code)
			}
		}
		if _, ok := op.Responses["408"]; rt.method == "POST" && !ok {
			t.Errorf("%s reads a body but documents no 408", key)
		}
	}
	if a, b := keys(documented), keys(served); strings.Join(a, "\n") != strings.Join(b, "\n") {
		t.Fatalf("openapi.yaml documents\n  %s\nthe server serves\n  %s", strings.Join(a, "\n  "), strings.Join(b, "\n  "))
	}
}

func keys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
