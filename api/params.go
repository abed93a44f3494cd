package api

import (
	"net/url"
	"strconv"
	"unicode/utf8"

	"github.com/offlinebox/offlinebox/edge"
)

// onlyParams refuses query parameters the route does not know, so that a
// typo is an error rather than a silently ignored bound, and names or
// values that are not valid UTF-8.
func onlyParams(q url.Values, known ...string) error {
	for name, vs := range q {
		if !utf8.ValidString(name) {
			return badRequest("query", "holds a parameter name that is not valid UTF-8")
		}
		for _, v := range vs {
			if !utf8.ValidString(v) {
				return badRequest(name, "is not valid UTF-8")
			}
		}
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

// seqParam parses an optional seq or epoch, 0..schemas.MaxSeq; ok is false
// when absent.
func seqParam(v, name string) (seq uint64, ok bool, err error) {
	if v == "" {
		return 0, false, nil
	}
	n, perr := strconv.ParseUint(v, 10, 64)
	if perr != nil {
		return 0, false, badRequest(name, "%q is not a non-negative integer", v)
	}
	if err := seqInRange(name, n); err != nil {
		return 0, false, err
	}
	return n, true, nil
}

// seqInRange refuses a seq or epoch above schemas.MaxSeq.
var seqInRange = edge.SeqInRange
