package push

import (
	"context"
	"errors"
	"sync"
	"testing"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/offlinebox/offlinebox/schemas"
)

func TestCallsArrivingDuringARoundShareTheNextAndEachGetsItsRoundsError(t *testing.T) {
	first := make(chan struct{})
	release := make(chan struct{})
	var mu sync.Mutex
	var rounds [][]string
	c := &combiner{run: func(_ context.Context, items []*item) error {
		var convs []string
		for _, it := range items {
			convs = append(convs, it.conv)
		}
		mu.Lock()
		rounds = append(rounds, convs)
		n := len(rounds)
		mu.Unlock()
		if n == 1 {
			close(first)
			<-release
			return nil
		}
		return errors.New("redis down")
	}}
	ctx := context.Background()
	errs := make(chan error, 4)
	go func() { errs <- c.do(ctx, []*item{{conv: "a"}}) }()
	<-first
	var joined sync.WaitGroup
	for _, conv := range []string{"b", "c", "d"} {
		joined.Add(1)
		go func() {
			joined.Done()
			errs <- c.do(ctx, []*item{{conv: conv}})
		}()
	}
	joined.Wait()
	// the three are queued once they hold the lock; wait until they have
	for {
		c.mu.Lock()
		n := 0
		if c.next != nil {
			n = len(c.next.items)
		}
		c.mu.Unlock()
		if n == 3 {
			break
		}
	}
	close(release)
	var failed, ok int
	for range 4 {
		if err := <-errs; err != nil {
			failed++
		} else {
			ok++
		}
	}
	if ok != 1 || failed != 3 {
		t.Fatalf("%d calls succeeded and %d failed, want the first alone to succeed", ok, failed)
	}
	if len(rounds) != 2 || len(rounds[0]) != 1 || len(rounds[1]) != 3 {
		t.Fatalf("rounds %v, want [a] then the three that came meanwhile together", rounds)
	}
}

func TestStoredRecordReadsTheQoSAsProtoUnmarshalDoes(t *testing.T) {
	body := make([]byte, 300)
	cases := []struct {
		name string
		msg  *schemas.Message
	}{
		{"unspecified", &schemas.Message{ConvId: "c", Sender: "u", Body: body}},
		{"at most once", &schemas.Message{ConvId: "c", Sender: "u", Qos: schemas.QoS_QOS_AT_MOST_ONCE, ContentType: "application/x-typing"}},
		{"at least once", &schemas.Message{ConvId: "c", Sender: "u", Qos: schemas.QoS_QOS_AT_LEAST_ONCE, Body: body, Recipients: []string{"a", "b"}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			v, err := proto.Marshal(tc.msg)
			if err != nil {
				t.Fatal(err)
			}
			if got, want := storedRecord(v), tc.msg.Stored(); got != want {
				t.Fatalf("storedRecord %v, want %v", got, want)
			}
		})
	}
	t.Run("the last qos counts", func(t *testing.T) {
		a, _ := proto.Marshal(&schemas.Message{Qos: schemas.QoS_QOS_AT_LEAST_ONCE})
		b, _ := proto.Marshal(&schemas.Message{Qos: schemas.QoS_QOS_AT_MOST_ONCE})
		if storedRecord(append(a, b...)) {
			t.Fatal("a record whose last qos is QoS 0 reads as stored")
		}
	})
	t.Run("unreadable", func(t *testing.T) {
		if storedRecord([]byte{0xff, 0xff, 0xff}) {
			t.Fatal("an unreadable record reads as stored: it would be skipped undecoded")
		}
	})
}

func TestStoredRecordReadsTheQoSFieldAsAVarintOfTheNumberTheDescriptorGives(t *testing.T) {
	fd := (&schemas.Message{}).ProtoReflect().Descriptor().Fields().ByName("qos")
	if fd == nil || fd.Number() != messageQoSField {
		t.Fatalf("qos field %v, reader looks at %d", fd, messageQoSField)
	}
	if fd.Kind() != protoreflect.EnumKind || fd.Cardinality() == protoreflect.Repeated {
		t.Fatalf("qos is a %v %v; the reader takes one varint", fd.Cardinality(), fd.Kind())
	}
}
