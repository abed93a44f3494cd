package live

import (
	"fmt"
	"testing"
	"time"
)

// TestUserBudgetsStayBounded: the users' buckets never exceed their bound;
// refilled ones are swept for new users.
func TestUserBudgetsStayBounded(t *testing.T) {
	cfg := Config{EphemeralUsers: 3}.WithDefaults()
	u := newUserBudgets(cfg)
	now := time.Unix(1000, 0)
	for i := 0; i < 3; i++ {
		if ok, _ := u.take(now, fmt.Sprint("u", i)); !ok {
			t.Fatalf("u%d refused", i)
		}
	}
	if ok, why := u.take(now, "u3"); ok || why != ephemeralUsersFull {
		t.Fatalf("a fourth user at once: %v %q, want users_full", ok, why)
	}
	later := now.Add(10 * time.Second) // every bucket refilled
	if ok, _ := u.take(later, "u3"); !ok || u.size() > 3 {
		t.Fatalf("after the buckets refilled: %v, %d kept", ok, u.size())
	}
}
