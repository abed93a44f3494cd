package api

import (
	"os"
	"testing"

	"go.yaml.in/yaml/v3"
)

// TestAsyncAPINamesAndDescribesEveryOperation holds asyncapi.yaml to the
// rules of Spectral's AsyncAPI ruleset that are errors there
// (scripts/lint-asyncapi.sh runs Spectral itself): every operation has an
// operationId, unique, and a description.
func TestAsyncAPINamesAndDescribesEveryOperation(t *testing.T) {
	data, err := os.ReadFile("asyncapi.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Channels map[string]map[string]struct {
			OperationID string `yaml:"operationId"`
			Description string `yaml:"description"`
		} `yaml:"channels"`
	}
	if err := yaml.Unmarshal(data, &doc); err != nil {
		t.Fatal(err)
	}
	seen := map[string]string{}
	for ch, ops := range doc.Channels {
		for verb, op := range ops {
			if verb != "subscribe" && verb != "publish" {
				continue
			}
			where := ch + " " + verb
			if op.OperationID == "" || op.Description == "" {
				t.Errorf("%s: operationId %q, description %q; want both", where, op.OperationID, op.Description)
			}
			if other, dup := seen[op.OperationID]; dup {
				t.Errorf("%s and %s share operationId %q", where, other, op.OperationID)
			}
			seen[op.OperationID] = where
		}
	}
	if len(seen) == 0 {
		t.Fatal("asyncapi.yaml has no operation")
	}
}
