package bounds

import (
	"cmp"
	"errors"
	"fmt"
)

// Rule is one check of a configuration; the zero Rule holds.
type Rule struct {
	// broken says how the field is out of range ("" when it is not).
	broken string
}

// Min requires v >= least: "<field> <v> is below <least>".
func Min[T cmp.Ordered](field string, v, least T) Rule {
	if v < least {
		return Rule{fmt.Sprintf("%s %v is below %v", field, v, least)}
	}
	return Rule{}
}

// Above requires v > floor: "<field> <v> is not above <floor>".
func Above[T cmp.Ordered](field string, v, floor T) Rule {
	if v <= floor {
		return Rule{fmt.Sprintf("%s %v is not above %v", field, v, floor)}
	}
	return Rule{}
}

// NotNegative requires v >= 0: "<field> <v> is negative".
func NotNegative[T cmp.Ordered](field string, v T) Rule {
	var zero T
	if v < zero {
		return Rule{fmt.Sprintf("%s %v is negative", field, v)}
	}
	return Rule{}
}

// Positive requires v > 0: "<field> <v> is not positive".
func Positive[T cmp.Ordered](field string, v T) Rule {
	var zero T
	if v <= zero {
		return Rule{fmt.Sprintf("%s %v is not positive", field, v)}
	}
	return Rule{}
}

// If is a rule of its own wording: broken when broken is true.
func If(broken bool, format string, args ...any) Rule {
	if broken {
		return Rule{fmt.Sprintf(format, args...)}
	}
	return Rule{}
}

// First returns the first broken rule as an error prefixed with owner, or
// nil when every rule holds.
func First(owner string, rules ...Rule) error {
	for _, r := range rules {
		if r.broken != "" {
			return errors.New(owner + ": " + r.broken)
		}
	}
	return nil
}
