package redisstore

import (
	"strconv"
	"sync"
)

// memberLists keep, per conversation, the member map the sequencing
// script last answered and the (epoch, mver) it was read at. A call that
// names it and finds the conversation at the same (epoch, mver) is
// answered "unchanged" instead of the hash: every change of the member
// set raises mver in the script that makes it, and a rebuild starts
// another epoch or replays the member set with the mver it had (the same
// identity the sync's copies rely on, readpath/sync_members.go). A list is good
// only on the server instances it was read from (the verified run_ids,
// fenceArg): a server restored from an older state may reach the same
// mver again with other members before a restore notices. Without it
// every message of a group of M members read the M-field hash, turned it
// into a Lua table and back and was parsed here: a third of the script's
// time at 100 members.
type memberLists struct {
	mu    sync.Mutex
	lists bounded[memberList] // weight: members
}

type memberList struct {
	fence       string // the verified run_ids it was read on
	epoch, mver uint64
	members     map[string]uint64 // read only once kept
}

// maxMemberLists and maxMemberListEntries bound the lists kept (a call
// without one reads the hash). A direct conversation's list is not kept
// (minListedMembers): its hash costs the script no more than the check,
// and thousands of them would push out the groups'.
const (
	maxMemberLists       = 4096
	maxMemberListEntries = 1 << 20
	minListedMembers     = 8
)

func newMemberLists() *memberLists {
	return &memberLists{lists: newBounded[memberList](maxMemberLists, maxMemberListEntries)}
}

// known is conv's list read on the instances fence names, and its token
// for the script ("" without one).
func (l *memberLists) known(conv, fence string) (memberList, string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	ml, ok := l.lists.get(conv)
	if !ok || ml.fence != fence {
		return memberList{}, ""
	}
	return ml, strconv.FormatUint(ml.epoch, 10) + ":" + strconv.FormatUint(ml.mver, 10)
}

// keep remembers conv's member map at (epoch, mver), read on fence's
// instances; a list too small to be worth it, or nil (a large group),
// leaves none.
func (l *memberLists) keep(conv, fence string, epoch, mver uint64, members map[string]uint64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(members) < minListedMembers {
		l.lists.remove(conv)
		return
	}
	l.lists.put(conv, memberList{fence: fence, epoch: epoch, mver: mver, members: members}, len(members))
}
