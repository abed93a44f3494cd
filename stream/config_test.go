package stream

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func validConfig() Config {
	return Config{
		Brokers:         []string{"127.0.0.1:9092"},
		Group:           "g",
		Topics:          []string{"in"},
		DeadLetterTopic: "dead",
	}
}

func TestConfigValidate_NamesTheBadField(t *testing.T) {
	tests := []struct {
		name   string
		change func(*Config)
		field  string
	}{
		{"no brokers", func(c *Config) { c.Brokers = nil }, "Brokers"},
		{"empty broker", func(c *Config) { c.Brokers = []string{""} }, "Brokers"},
		{"no group", func(c *Config) { c.Group = "" }, "Group"},
		{"no topics", func(c *Config) { c.Topics = nil }, "Topics"},
		{"empty topic", func(c *Config) { c.Topics = []string{"a", ""} }, "Topics"},
		{"no dead-letter topic", func(c *Config) { c.DeadLetterTopic = "" }, "DeadLetterTopic"},
		{"dead-letter topic consumed", func(c *Config) { c.DeadLetterTopic = "in" }, "DeadLetterTopic"},
		{"negative poll size", func(c *Config) { c.MaxPollRecords = -1 }, "MaxPollRecords"},
		{"negative retry min", func(c *Config) { c.RetryMin = -time.Second }, "RetryMin"},
		{"retry max below min", func(c *Config) { c.RetryMin, c.RetryMax = time.Second, time.Millisecond }, "RetryMax"},
		{"negative commit interval", func(c *Config) { c.CommitInterval = -1 }, "CommitInterval"},
		{"negative commit timeout", func(c *Config) { c.CommitTimeout = -1 }, "CommitTimeout"},
		{"produce timeout too short", func(c *Config) { c.ProduceTimeout = time.Millisecond }, "ProduceTimeout"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := validConfig()
			tt.change(&cfg)
			err := cfg.Validate()
			if !errors.Is(err, ErrInvalidConfig) {
				t.Fatalf("Validate() = %v, want ErrInvalidConfig", err)
			}
			if !strings.Contains(err.Error(), tt.field) {
				t.Fatalf("Validate() = %q, want it to name %s", err, tt.field)
			}
		})
	}
}

func TestConfigValidate_DefaultsMakeMinimalConfigValid(t *testing.T) {
	cfg := validConfig()
	if err := cfg.Validate(); err != nil {
		t.Fatalf("Validate() = %v", err)
	}
	d := cfg.withDefaults()
	if d.ClientID != cfg.Group || d.MaxPollRecords != DefaultMaxPollRecords ||
		d.RetryMin != DefaultRetryMin || d.RetryMax != DefaultRetryMax || d.Logger == nil {
		t.Fatalf("defaults not applied: %+v", d)
	}
	cfg.RetryMin = time.Minute // above the default RetryMax
	if err := cfg.Validate(); err != nil {
		t.Fatalf("RetryMin above the default RetryMax: Validate() = %v, want RetryMax raised to it", err)
	}
}

func TestNew_RejectsNilHandlerAndBadConfig(t *testing.T) {
	if _, err := New(validConfig(), nil); !errors.Is(err, ErrInvalidConfig) {
		t.Fatalf("New(nil handler) = %v, want ErrInvalidConfig", err)
	}
	bad := validConfig()
	bad.Group = ""
	if _, err := New(bad, HandlerFunc(nil)); !errors.Is(err, ErrInvalidConfig) {
		t.Fatalf("New(no group) = %v, want ErrInvalidConfig", err)
	}
}
