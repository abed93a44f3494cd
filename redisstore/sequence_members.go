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
// identity the sync's copies rely on, sync_members.go). Without it every
// message of a group of M members read the M-field hash, turned it into
// a Lua table and back and was parsed here: a third of the script's time
// at 100 members.
type memberLists struct {
	mu    sync.Mutex
	lists bounded[memberList] // weight: members
}

type memberList struct {
	epoch, mver uint64
	members     map[string]uint64 // read only once kept
}

// maxMemberLists and maxMemberListEntries bound the lists kept (a call
// without one reads the hash).
const (
	maxMemberLists       = 4096
	maxMemberListEntries = 1 << 20
)

func newMemberLists() *memberLists {
	return &memberLists{lists: newBounded[memberList](maxMemberLists, maxMemberListEntries)}
}

// known is conv's list and its token for the script ("" without one).
func (l *memberLists) known(conv string) (memberList, string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	ml, ok := l.lists.get(conv)
	if !ok {
		return memberList{}, ""
	}
	return ml, strconv.FormatUint(ml.epoch, 10) + ":" + strconv.FormatUint(ml.mver, 10)
}

// keep remembers conv's member map at (epoch, mver).
func (l *memberLists) keep(conv string, epoch, mver uint64, members map[string]uint64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lists.put(conv, memberList{epoch: epoch, mver: mver, members: members}, len(members))
}
