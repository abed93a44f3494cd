package chstore_test

import (
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/offlinebox/offlinebox/chstore"
	"github.com/offlinebox/offlinebox/schemas"
)

// readmeExamples returns the ```sql blocks of schemas/clickhouse/README.md,
// keyed by their first line (a "-- name" comment).
func readmeExamples(t *testing.T) map[string]string {
	t.Helper()
	text, err := os.ReadFile("../schemas/clickhouse/README.md")
	if err != nil {
		t.Fatal(err)
	}
	out := make(map[string]string)
	blocks := strings.Split(string(text), "```sql\n")
	for _, b := range blocks[1:] {
		sql, _, ok := strings.Cut(b, "```")
		if !ok {
			t.Fatalf("unterminated sql block in README: %q", b)
		}
		first, _, _ := strings.Cut(sql, "\n")
		name, ok := strings.CutPrefix(first, "-- ")
		if !ok {
			t.Fatalf("README sql block does not start with a -- name line: %q", first)
		}
		out[name] = sql
	}
	return out
}

// analystData inserts two conversations over two recent days, with replays
// and a membership notice, and returns the distinct messages.
func analystData(t *testing.T, s *chstore.Store) []*schemas.Sequenced {
	day := time.Now().UTC().Truncate(24*time.Hour).AddDate(0, 0, -2).Add(6 * time.Hour)
	a := fixture("a", 1, 30, writtenAt(day))
	b := fixture("b", 1, 12, writtenAt(day.AddDate(0, 0, 1)))
	b[5].Message.Sender = "u9"
	join := fixture("b", 13, 13, writtenAt(day.AddDate(0, 0, 1)))
	join[0].Message.Kind = schemas.Kind_KIND_MEMBER_JOIN
	for _, batch := range [][]*schemas.Sequenced{a, b, join, a[10:20], b[:3]} {
		if err := s.InsertBatch(testCtx(t), batch); err != nil {
			t.Fatal(err)
		}
	}
	return append(a, b...)
}

// expectedRows computes, from the distinct messages, the rows each README
// example must return, in its ORDER BY.
var expectedRows = map[string]func(msgs []*schemas.Sequenced) [][]string{
	"messages per day per conversation": func(msgs []*schemas.Sequenced) [][]string {
		n := map[[2]string]int{}
		for _, m := range msgs {
			n[[2]string{dayOf(m), m.GetMessage().GetConvId()}]++
		}
		return sortedRows(n, func(k [2]string, v int) []string { return []string{k[0], k[1], fmt.Sprint(v)} },
			func(x, y []string) int { return cmpDesc(x[0], y[0], x[2], y[2], x[1], y[1]) })
	},
	"most active senders": func(msgs []*schemas.Sequenced) [][]string {
		n, convs := map[string]int{}, map[string]map[string]bool{}
		for _, m := range msgs {
			s := m.GetMessage().GetSender()
			n[s]++
			if convs[s] == nil {
				convs[s] = map[string]bool{}
			}
			convs[s][m.GetMessage().GetConvId()] = true
		}
		return sortedRows(n, func(k string, v int) []string { return []string{k, fmt.Sprint(v), fmt.Sprint(len(convs[k]))} },
			func(x, y []string) int { return cmpDesc("", "", x[1], y[1], x[0], y[0]) })
	},
	"mention volume per day": func(msgs []*schemas.Sequenced) [][]string {
		n := map[string][3]int{}
		for _, m := range msgs {
			c := n[dayOf(m)]
			if k := len(m.GetMessage().GetMentions()); k > 0 {
				c[0]++
				c[1] += k
			}
			if m.GetMessage().GetMentionAll() {
				c[2]++
			}
			n[dayOf(m)] = c
		}
		return sortedRows(n, func(k string, v [3]int) []string {
			return []string{k, fmt.Sprint(v[0]), fmt.Sprint(v[1]), fmt.Sprint(v[2])}
		}, func(x, y []string) int { return strings.Compare(x[0], y[0]) })
	},
	"most mentioned users": func(msgs []*schemas.Sequenced) [][]string {
		n := map[string]int{}
		for _, m := range msgs {
			for _, u := range m.GetMessage().GetMentions() {
				n[u]++
			}
		}
		return sortedRows(n, func(k string, v int) []string { return []string{k, fmt.Sprint(v)} },
			func(x, y []string) int { return cmpDesc("", "", x[1], y[1], x[0], y[0]) })
	},
}

func TestAnalystExamplesOfTheREADMEReturnTheCollapsedAnswer(t *testing.T) {
	examples := readmeExamples(t)
	if len(examples) < 3 {
		t.Fatalf("README has %d analyst examples, want at least 3", len(examples))
	}
	s := newStore(t)
	msgs := analystData(t, s)
	for name, sql := range examples {
		t.Run(name, func(t *testing.T) {
			want, ok := expectedRows[name]
			if !ok {
				t.Fatalf("README example %q has no expected answer in this test", name)
			}
			_, rows, err := s.Query(testCtx(t), sql)
			if err != nil {
				t.Fatalf("Query: %v\n%s", err, sql)
			}
			if w := want(msgs); !slices.EqualFunc(rows, w, slices.Equal) {
				t.Fatalf("rows = %q\nwant   %q", rows, w)
			}
		})
	}
}

func dayOf(m *schemas.Sequenced) string {
	return time.UnixMilli(m.GetWriteTimeMs()).UTC().Format(time.DateOnly)
}

func sortedRows[K comparable, V any](m map[K]V, row func(K, V) []string, cmp func(x, y []string) int) [][]string {
	var out [][]string
	for k, v := range m {
		out = append(out, row(k, v))
	}
	slices.SortFunc(out, cmp)
	return out
}

// cmpDesc orders by a descending, then count n descending (numerically),
// then tie ascending.
func cmpDesc(a1, a2, n1, n2, tie1, tie2 string) int {
	if c := strings.Compare(a2, a1); c != 0 {
		return c
	}
	var x, y int
	fmt.Sscan(n1, &x)
	fmt.Sscan(n2, &y)
	if x != y {
		return y - x
	}
	return strings.Compare(tie1, tie2)
}
