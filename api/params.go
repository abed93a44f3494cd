package api

import (
	"net/url"
	"strconv"
)

// onlyParams refuses query parameters the route does not know, so that a
// typo is an error rather than a silently ignored bound.
func onlyParams(q url.Values, known ...string) error {
	for name := range q {
		ok := false
		for _, k := range known {
			ok = ok || name == k
		}
		if !ok {
			return badRequest(name, "is not a known parameter")
		}
	}
	for _, k := range known {
		if len(q[k]) > 1 {
			return badRequest(k, "is given %d times", len(q[k]))
		}
	}
	return nil
}

// intParam parses an optional integer parameter within [lo, hi].
func intParam(v, name string, def, lo, hi int) (int, error) {
	if v == "" {
		return def, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		return 0, badRequest(name, "%q is not an integer", v)
	}
	if n < lo || n > hi {
		return 0, badRequest(name, "%d is outside %d..%d", n, lo, hi)
	}
	return n, nil
}

// seqParam parses an optional non-negative seq; ok is false when absent.
func seqParam(v, name string) (seq uint64, ok bool, err error) {
	if v == "" {
		return 0, false, nil
	}
	n, perr := strconv.ParseUint(v, 10, 64)
	if perr != nil {
		return 0, false, badRequest(name, "%q is not a non-negative integer", v)
	}
	return n, true, nil
}
