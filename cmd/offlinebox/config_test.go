package main

import (
	"strings"
	"testing"
)

func TestStackConfigRejectsSettingsThatCannotWork(t *testing.T) {
	cases := []struct {
		name       string
		args       []string
		needSecret bool
		field      string
	}{
		{"defaults are valid for a worker", nil, false, ""},
		{"the API needs a secret", nil, true, "-jwt-secret"},
		{"a short secret", []string{"-jwt-secret", "short"}, true, "-jwt-secret"},
		{"a long enough secret", []string{"-jwt-secret", "0123456789abcdef"}, true, ""},
		{"no broker", []string{"-kafka", " , "}, false, "-kafka"},
		{"several redis without cluster mode", []string{"-redis", "a:1,b:2"}, false, "-redis"},
		{"several redis in cluster mode", []string{"-redis", "a:1,b:2", "-redis-cluster"}, false, ""},
		{"no partitions", []string{"-partitions", "0"}, false, "-partitions"},
		{"negative session timeout", []string{"-session-timeout", "-1s"}, false, "-session-timeout"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("OFFLINEBOX_JWT_SECRET", "")
			c, _, err := parseStack("test", tc.args, nil)
			if err != nil {
				t.Fatal(err)
			}
			err = c.validate(tc.needSecret)
			switch {
			case tc.field == "" && err != nil:
				t.Fatalf("want valid, got %v", err)
			case tc.field != "" && (err == nil || !strings.HasPrefix(err.Error(), tc.field)):
				t.Fatalf("want an error naming %s, got %v", tc.field, err)
			}
		})
	}
}

func TestServersBindToLoopbackByDefault(t *testing.T) {
	t.Setenv("OFFLINEBOX_LISTEN", "")
	t.Setenv("OFFLINEBOX_METRICS_LISTEN", "")
	c, _, err := parseStack("test", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, addr := range []string{c.Listen, c.MetricsListen} {
		if !strings.HasPrefix(addr, "127.0.0.1:") {
			t.Errorf("default listen address %q is not loopback", addr)
		}
	}
}
