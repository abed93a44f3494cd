package redisstore

import (
	"errors"
	"fmt"
	"strings"

	"github.com/redis/go-redis/v9"
)

// ErrMalformedReply: a script answered a reply its caller cannot read (not
// the shape it promises). The same call answers the same again, so it is
// never worth retrying.
var ErrMalformedReply = errors.New("malformed script reply")

// sharedStateError is a failure reading state every call depends on (the
// set of users on the hot store): whatever the server answered, it is no
// one update's fault, so it is waited for, never dead-lettered with every
// update it stopped.
type sharedStateError struct{ err error }

func (e sharedStateError) Error() string { return e.err.Error() }
func (e sharedStateError) Unwrap() error { return e.err }

// temporaryReplies are the first words of the server's error replies that
// say the server cannot take the command now but will later: it is
// loading, busy with a script, between masters, out of memory until
// expiry frees some, refusing writes until its disk or replicas are back,
// or it was never the node for the key. The store's own refusals that ask
// for another try (a fence to verify, a user to route again, a read to
// repeat) and a lost script cache are waited for too. Authentication and
// ACL refusals are among them: an operator fixes them, and until then
// every call fails alike, so they are a store that is down for us.
var temporaryReplies = map[string]bool{
	"LOADING": true, "BUSY": true, "TRYAGAIN": true, "CLUSTERDOWN": true, "MASTERDOWN": true,
	"READONLY": true, "NOREPLICAS": true, "OOM": true, "MISCONF": true, "MOVED": true, "ASK": true,
	"NOSCRIPT": true, "NOAUTH": true, "WRONGPASS": true, "NOPERM": true,
	refusalFenced: true, refusalMoved: true, refusalDedupe: true, refusalDevices: true, RefusalUnindexed: true,
}

// Permanent reports whether err is an answer that the same call can never
// change: the server refused the command for what it is or for what its
// keys hold (WRONGTYPE, an error raised by a script, a command it does
// not know), or the reply was malformed (ErrMalformedReply). Anything else
// is a store to wait for: network errors, timeouts, a context that ended,
// a pool without a free connection, a closed client, the server replies
// of temporaryReplies, the fence (ErrFenced), a user being moved
// (ErrUserMoved) and any failure of state all calls share (the hot users'
// set: a broken one stops every user alike). An error that is none of these, and not a server's
// reply, counts as temporary: what cannot be pinned on the data is
// waited for, which costs time and never a record.
func Permanent(err error) bool {
	switch {
	case err == nil, errors.Is(err, redis.Nil): // redis.Nil: an absent value, no failure
		return false
	case errors.Is(err, ErrMalformedReply):
		return true
	case errors.Is(err, ErrFenced), errors.Is(err, ErrUserMoved), errors.As(err, new(sharedStateError)):
		return false
	}
	var reply redis.Error
	if !errors.As(err, &reply) {
		return false
	}
	return !temporaryReplies[replyCode(reply.Error())]
}

// replyCode is the first word of a server's error reply. A script's error
// is the error of the command it ran (Redis 7: "WRONGTYPE … script: …"),
// but older servers wrap it: "ERR Error running script (call to f_…):
// @user_script:12: -OOM command not allowed…", whose code follows the
// last ": -". "ERR max number of clients reached" and a killed script are
// the server's state, not the data's: they count as BUSY.
func replyCode(msg string) string {
	code, _, _ := strings.Cut(msg, " ")
	if code != "ERR" {
		return code
	}
	if i := strings.LastIndex(msg, ": -"); i >= 0 {
		inner, _, _ := strings.Cut(msg[i+3:], " ")
		return inner
	}
	if strings.HasPrefix(msg, "ERR max number of clients") || strings.Contains(msg, "Script killed") {
		return "BUSY"
	}
	return code
}

// ItemErrors is the error of a call of many items (ApplyReads,
// ApplyPreviews) whose only failures can never pass (Permanent): every
// other item was applied, and item i of the call, if it failed, failed
// with ItemErrors[i]. The caller gives those items up; trying the call
// again would apply nothing more. A failure to wait for is never one.
type ItemErrors map[int]error

func (e ItemErrors) Error() string {
	first := -1
	for i := range e {
		if first < 0 || i < first {
			first = i
		}
	}
	if first < 0 {
		return "no item failed"
	}
	return fmt.Sprintf("%d items can never succeed; item %d: %v", len(e), first, e[first])
}

// add records the error of item i, unless the item already has one.
func (e ItemErrors) add(i int, err error) {
	if e[i] == nil {
		e[i] = err
	}
}

// absorb takes the ItemErrors of a call of the items idx (indexes into
// e's call) into e and returns nil; any other error it returns as it is.
func (e ItemErrors) absorb(idx []int, err error) error {
	var items ItemErrors
	if !errors.As(err, &items) {
		return err
	}
	for i, ie := range items {
		e.add(idx[i], ie)
	}
	return nil
}

// itemFailures reads the replies of a pipeline whose call i stands for
// the caller's items itemsOf(i) (nil: item i alone): errOf(i) is call
// i's failure, its reply read. A call that failed for good fails its
// items alone, as ItemErrors wrapped with what(i); otherwise the first
// failure to wait for is returned, once every reply was read (so that
// errOf may keep what the calls that passed answered).
func itemFailures(n int, errOf func(i int) error, itemsOf func(i int) []int, what func(i int) string) error {
	failed := ItemErrors{}
	var wait error
	for i := range n {
		err := errOf(i)
		switch {
		case err == nil:
		case Permanent(err):
			items := []int{i}
			if itemsOf != nil {
				items = itemsOf(i)
			}
			for _, at := range items {
				failed.add(at, fmt.Errorf("%s: %w", what(i), err))
			}
		case wait == nil:
			wait = fmt.Errorf("%s: %w", what(i), err)
		}
	}
	if wait != nil {
		return wait
	}
	if len(failed) > 0 {
		return failed
	}
	return nil
}

// countFailures is itemFailures over calls that each answer a count: it
// returns the sum of the counts the calls that passed answered.
func countFailures(cmds []*redis.Cmd, itemsOf func(i int) []int, what func(i int) string) (int, error) {
	total := 0
	err := itemFailures(len(cmds), func(i int) error {
		n, err := cmds[i].Int()
		total += n
		return err
	}, itemsOf, what)
	return total, err
}
