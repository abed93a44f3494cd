package harness

import (
	"regexp"
	"testing"
	"time"
	"unicode/utf8"
)

func TestPercentileIsTheNearestRankInMilliseconds(t *testing.T) {
	ms := func(v ...int) []time.Duration {
		out := make([]time.Duration, len(v))
		for i, x := range v {
			out[i] = time.Duration(x) * time.Millisecond
		}
		return out
	}
	tests := []struct {
		name    string
		samples []time.Duration
		p       float64
		want    float64
	}{
		{"no samples", nil, 99, 0},
		{"one sample", ms(7), 50, 7},
		{"median of unsorted", ms(9, 1, 5, 3, 7), 50, 5},
		{"p99 of 100 is the 99th", ms(seq(1, 100)...), 99, 99},
		{"p100 is the largest", ms(4, 2, 8), 100, 8},
		{"p0 is the smallest", ms(4, 2, 8), 0, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Percentile(tt.samples, tt.p); got != tt.want {
				t.Fatalf("Percentile(%v, %g) = %g, want %g", tt.samples, tt.p, got, tt.want)
			}
		})
	}
}

func seq(lo, hi int) []int {
	var out []int
	for i := lo; i <= hi; i++ {
		out = append(out, i)
	}
	return out
}

func TestKindOfNamesKeysWithoutTheirIDs(t *testing.T) {
	tests := []struct{ key, want string }{
		{"bench:{c:g01}:tl", "{c}:tl"},
		{"bench:{c:g01}:dd:20423", "{c}:dd"},
		{"bench:{u:alice}:cur:phone", "{u}:cur"},
		{"bench:{u:alice}:ib", "{u}:ib"},
		{"bench:{hot}:users", "{hot}:users"},
		{"bench:plain", "other"},
	}
	for _, tt := range tests {
		if got := KindOf("bench:", tt.key); got != tt.want {
			t.Errorf("KindOf(%q) = %q, want %q", tt.key, got, tt.want)
		}
	}
}

func TestScaleAcceptsNamesAndFractionsOnly(t *testing.T) {
	tests := []struct {
		in      string
		want    float64
		wantErr bool
	}{
		{"small", ScaleSmall, false},
		{"full", ScaleFull, false},
		{"0.25", 0.25, false},
		{"1", 1, false},
		{"0", 0, true},
		{"1.5", 0, true},
		{"-0.1", 0, true},
		{"big", 0, true},
	}
	for _, tt := range tests {
		var v float64
		err := scaleValue{&v}.Set(tt.in)
		if (err != nil) != tt.wantErr || (!tt.wantErr && v != tt.want) {
			t.Errorf("scale %q: got %g, %v; want %g, error %v", tt.in, v, err, tt.want, tt.wantErr)
		}
	}
}

func TestScaledKeepsALowerBound(t *testing.T) {
	f := &Flags{Scale: 0.05}
	if got := f.Scaled(28000, 1); got != 1400 {
		t.Errorf("Scaled(28000) at 0.05 = %d, want 1400", got)
	}
	if got := f.Scaled(100, 20); got != 20 {
		t.Errorf("Scaled(100, lo 20) at 0.05 = %d, want 20", got)
	}
}

func TestCheckLoopbackRefusesOtherHosts(t *testing.T) {
	tests := []struct {
		addr string
		ok   bool
	}{
		{"127.0.0.1:6379", true},
		{"127.3.2.1:6379", true},
		{"[::1]:9000", true},
		{"localhost:9092", true},
		{"10.0.0.5:6379", false},
		{"192.168.1.2:6379", false},
		{"redis.example:6379", false},
		{"127.0.0.1", false},
	}
	for _, tt := range tests {
		if err := CheckLoopback("redis", tt.addr); (err == nil) != tt.ok {
			t.Errorf("CheckLoopback(%q) = %v, want ok %v", tt.addr, err, tt.ok)
		}
	}
}

func TestBodiesAreValidTextWithinTheSizeRange(t *testing.T) {
	b := NewBodies(3)
	var total int
	const n = 2000
	for range n {
		body := b.Next()
		if len(body) < BodyMinBytes || len(body) > BodyMaxBytes {
			t.Fatalf("body of %d bytes is outside %d..%d", len(body), BodyMinBytes, BodyMaxBytes)
		}
		if !utf8.Valid(body) {
			t.Fatalf("body is not UTF-8: %q", body)
		}
		total += len(body)
	}
	if mean := total / n; mean < 200 || mean > 250 {
		t.Errorf("mean body %d bytes, want about 225", mean)
	}
	if a, c := NewBodies(9).Next(), NewBodies(9).Next(); string(a) != string(c) {
		t.Errorf("the same seed gave different bodies")
	}
}

func TestUUIDLooksLikeAVersion4UUID(t *testing.T) {
	re := regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)
	b := NewBodies(1)
	seen := map[string]bool{}
	for range 1000 {
		id := b.UUID()
		if !re.MatchString(id) {
			t.Fatalf("%q is not a version 4 UUID", id)
		}
		if seen[id] {
			t.Fatalf("%q repeated", id)
		}
		seen[id] = true
	}
}

func TestFewestBatchesCutsEachKeysRecordsOfACallByTheMergeSize(t *testing.T) {
	tests := []struct {
		name string
		runs map[int]int // records of a key in one call → how many times
		size int
		want int
	}{
		{"nothing handled", map[int]int{}, 20, 0},
		{"whole merges", map[int]int{20: 3, 40: 1}, 20, 5},
		{"a poll cut a key's records", map[int]int{37: 1, 63: 1}, 20, 2 + 4},
		{"one record a call", map[int]int{1: 10}, 20, 10},
		{"merge of one", map[int]int{3: 2}, 1, 6},
	}
	for _, tc := range tests {
		if got := fewestBatches(tc.runs, tc.size); got != tc.want {
			t.Errorf("%s: %d batches, want %d", tc.name, got, tc.want)
		}
	}
}

func TestParseCommandStatReadsCallsAndUsecOfCommandLinesOnly(t *testing.T) {
	tests := []struct {
		line   string
		name   string
		st     CommandStat
		wantOK bool
	}{
		{"cmdstat_evalsha:calls=12,usec=340,usec_per_call=28.33,rejected_calls=0,failed_calls=0\r", "evalsha", CommandStat{Calls: 12, Usec: 340}, true},
		{"cmdstat_get:calls=3,usec=10", "get", CommandStat{Calls: 3, Usec: 10}, true},
		{"used_memory_dataset:1024", "", CommandStat{}, false},
		{"# Commandstats", "", CommandStat{}, false},
	}
	for _, tt := range tests {
		name, st, ok := ParseCommandStat(tt.line)
		if name != tt.name || st != tt.st || ok != tt.wantOK {
			t.Errorf("ParseCommandStat(%q) = %q, %+v, %v; want %q, %+v, %v", tt.line, name, st, ok, tt.name, tt.st, tt.wantOK)
		}
	}
}
