package fanout

import (
	"fmt"
	"strings"
	"testing"

	"github.com/offlinebox/offlinebox/schemas"
)

func TestMergeBatchesCutAtTheSizeAndBeforeEveryLeave(t *testing.T) {
	kinds := func(spec string) []pending {
		var out []pending
		for i, c := range spec {
			m := msg("g", fmt.Sprint(i), "a")
			if c == 'L' {
				leave("b")(m)
			}
			out = append(out, pending{msg: m})
		}
		return out
	}
	cases := []struct {
		spec string
		size int
		want string
	}{
		{"mmmmm", 2, "[mm mm m]"},
		{"mmLmm", 20, "[mm Lmm]"},
		{"LmLL", 20, "[Lm L L]"},
		{"mmmLm", 3, "[mmm Lm]"},
		{"", 20, "[]"},
	}
	for _, tc := range cases {
		var got []string
		for _, b := range mergeBatches(kinds(tc.spec), tc.size) {
			var s strings.Builder
			for _, p := range b {
				if p.msg.GetKind() == schemas.Kind_KIND_MEMBER_LEAVE {
					s.WriteByte('L')
				} else {
					s.WriteByte('m')
				}
			}
			got = append(got, s.String())
		}
		if fmt.Sprint(got) != tc.want {
			t.Errorf("%q by %d: %v, want %s", tc.spec, tc.size, got, tc.want)
		}
	}
}
