package chstore

import (
	"strings"
	"testing"
	"time"
)

func TestConfigValidateNamesTheBadField(t *testing.T) {
	tests := []struct {
		name  string
		cfg   Config
		field string
	}{
		{"addr without port", Config{Addr: "localhost"}, "Addr"},
		{"second addr without port", Config{Addr: "a:9000,b"}, "Addr"},
		{"database with dash", Config{Database: "my-db"}, "Database"},
		{"database with quote", Config{Database: "x`; DROP"}, "Database"},
		{"negative dial timeout", Config{DialTimeout: -time.Second}, "DialTimeout"},
		{"negative insert timeout", Config{InsertTimeout: -time.Second}, "InsertTimeout"},
		{"negative analyst rows", Config{AnalystMaxRows: -1}, "AnalystMaxRows"},
		{"negative pool", Config{MaxOpenConns: -1}, "MaxOpenConns"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.cfg.Validate()
			if err == nil || !strings.Contains(err.Error(), tt.field) {
				t.Fatalf("Validate() = %v, want an error naming %s", err, tt.field)
			}
		})
	}
}

func TestConfigDefaultsAreValid(t *testing.T) {
	for _, cfg := range []Config{{}, {Addr: "10.0.0.1:9000, 10.0.0.2:9000", Database: "history_2"}, {Addr: "[::1]:9000"}} {
		if err := cfg.Validate(); err != nil {
			t.Fatalf("Validate(%+v) = %v", cfg, err)
		}
	}
	if got := (Config{Addr: "a:1, b:2"}).addrs(); len(got) != 2 || got[1] != "b:2" {
		t.Fatalf("addrs = %q, want [a:1 b:2]", got)
	}
}
