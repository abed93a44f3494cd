package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/offlinebox/offlinebox/internal/testenv"
	"github.com/offlinebox/offlinebox/redisstore"
)

// TestRevokeRecordsTheRevocationEveryAPINodeActsOn: `offlinebox revoke`
// writes the user's (or the device's) revoked-before time, which covers
// the tokens issued before it and no later one, and puts it in the log
// the API nodes read every second to close the sockets it covers; bad
// flags change nothing.
func TestRevokeRecordsTheRevocationEveryAPINodeActsOn(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	rdb, prefix := testenv.Redis(t)
	st, err := redisstore.New(rdb, redisstore.Config{Prefix: prefix})
	if err != nil {
		t.Fatal(err)
	}
	stores := []string{"-redis", testenv.RedisAddr(t), "-prefix", prefix}
	for _, bad := range [][]string{{}, {"-user", "a{b}"}, {"-user", "bob", "-device", "x:y"}, {"-user", "bob", "-keep", "-1s"}} {
		if err := runRevoke(ctx, append(append([]string{}, stores...), bad...), &bytes.Buffer{}); err == nil {
			t.Errorf("revoke %v was accepted", bad)
		}
	}
	if rec, err := st.RevokedOf(ctx, "bob"); err != nil || !rec.User.IsZero() || len(rec.Devices) != 0 {
		t.Fatalf("refused commands left %+v, %v", rec, err)
	}
	before := time.Now()
	var out bytes.Buffer
	if err := runRevoke(ctx, append(stores, "-user", "bob", "-device", "phone"), &out); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "revoked bob/phone") {
		t.Errorf("revoke said %q", out.String())
	}
	if err := runRevoke(ctx, append(stores, "-user", "carol"), &bytes.Buffer{}); err != nil {
		t.Fatal(err)
	}
	after := time.Now().Add(time.Second)
	for _, c := range []struct {
		user, device string
		issued       time.Time
		covered      bool
	}{
		{"bob", "phone", before.Add(-time.Second), true},
		{"bob", "laptop", before.Add(-time.Second), false},
		{"bob", "phone", after, false},
		{"carol", "any", before.Add(-time.Second), true},
		{"carol", "any", after, false},
	} {
		rec, err := st.RevokedOf(ctx, c.user)
		if err != nil {
			t.Fatal(err)
		}
		if got := rec.Covers(c.device, c.issued); got != c.covered {
			t.Errorf("%s/%s issued %s: covered %v, want %v", c.user, c.device, c.issued.Format(time.StampMilli), got, c.covered)
		}
	}
	log, err := st.RevocationsSince(ctx, before.Add(-time.Second), 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(log) != 2 || log[0].User != "bob" || log[0].Device != "phone" || log[1].User != "carol" || log[1].Device != redisstore.RevokedAllDevices {
		t.Errorf("the log holds %+v, want bob/phone then carol's every device", log)
	}
}
