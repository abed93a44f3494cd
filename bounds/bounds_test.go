package bounds

import (
	"testing"
	"time"
)

func TestFirstReportsTheFirstBrokenRuleInTheConfigsWording(t *testing.T) {
	for _, tc := range []struct {
		name  string
		rules []Rule
		want  string
	}{
		{"every rule holds", []Rule{Min("A", 1, 1), Above("B", 2.5, 1), NotNegative("C", 0), Positive("D", time.Second), If(false, "E")}, ""},
		{"an int below its least", []Rule{Min("MergeSize", 0, 1)}, "fanout: MergeSize 0 is below 1"},
		{"a duration below its least", []Rule{Min("RestoreTimeout", 500*time.Millisecond, time.Second)}, "fanout: RestoreTimeout 500ms is below 1s"},
		{"a float not above its floor", []Rule{Above("HotFactor", 1.0, 1)}, "fanout: HotFactor 1 is not above 1"},
		{"a negative duration", []Rule{NotNegative("ProduceTimeout", -time.Second)}, "fanout: ProduceTimeout -1s is negative"},
		{"a zero duration that must be positive", []Rule{Positive("RetryMin", time.Duration(0))}, "fanout: RetryMin 0s is not positive"},
		{"a rule of its own wording", []Rule{If(true, "HotRoute needs %s", "HotRedis")}, "fanout: HotRoute needs HotRedis"},
		{"the first of two broken rules", []Rule{Min("A", 1, 1), Min("B", 0, 1), NotNegative("C", -1)}, "fanout: B 0 is below 1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := First("fanout", tc.rules...)
			got := ""
			if err != nil {
				got = err.Error()
			}
			if got != tc.want {
				t.Fatalf("First = %q, want %q", got, tc.want)
			}
		})
	}
}
