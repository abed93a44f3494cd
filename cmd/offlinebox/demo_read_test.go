package main

import (
	"testing"

	"github.com/offlinebox/offlinebox/client"
)

// TestAReadClearsTheUnreadUpToItsSeqAndLeavesNewerMessagesUnread pins the
// demo's read check: messages sequenced after the read point (users' own,
// from a run before) are unread on every device and do not fail it.
func TestAReadClearsTheUnreadUpToItsSeqAndLeavesNewerMessagesUnread(t *testing.T) {
	for _, tc := range []struct {
		name string
		conv client.ConvItem
		seq  uint64
		want uint64
	}{
		{"applied, nothing newer", client.ConvItem{LastSeq: 42, ReadSeq: 42}, 42, 0},
		{"applied, one newer message", client.ConvItem{LastSeq: 43, ReadSeq: 42, Unread: 1}, 42, 0},
		{"not applied yet", client.ConvItem{LastSeq: 42, ReadSeq: 30, Unread: 12}, 42, 12},
		{"applied but unread counts below the read", client.ConvItem{LastSeq: 43, ReadSeq: 42, Unread: 3}, 42, 2},
		{"read beyond the last seq", client.ConvItem{LastSeq: 40, ReadSeq: 42}, 42, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := unreadAtOrBelow(tc.conv, tc.seq); got != tc.want {
				t.Fatalf("unreadAtOrBelow(%+v, %d) = %d, want %d", tc.conv, tc.seq, got, tc.want)
			}
		})
	}
}
