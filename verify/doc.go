// Package verify checks a live offlinebox Redis store against the
// invariants of the design and reports what it finds:
//
//   - per conversation: the timeline holds exactly the seqs from its floor
//     `first` to the counter, each entry with its own seq and a body (no
//     holes); the member count matches the member set; a group with
//     members has exactly one owner and only members hold roles; every
//     @all reference of a large group points at a seq that exists;
//   - per user and conversation: the stored unread equals last delivered
//     minus read, and equals a recount of the messages from others above
//     the read seq in the timeline (large groups: the unread derived at
//     read time, recounted the same way);
//   - every mention reference points at a message that exists and mentions
//     the user, or at one below the retention floor (expired, which is
//     fine);
//   - no device cursor is above its conversation's counter (same epoch),
//     every cursor belongs to a registered device, and no user has more
//     devices than allowed.
//
// It walks the store with SCAN (every master of a cluster), reading each
// key's part in small consistent steps, so it runs against a store that is
// being written to. Every comparison reads the user side before the
// conversation side: counters only grow, so a write landing between the
// two reads never shows as a problem. Users moved to the hot store are
// checked there; their stale main-store copies are passed over.
package verify
