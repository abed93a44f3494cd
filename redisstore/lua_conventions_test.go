package redisstore

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/offlinebox/offlinebox/internal/luacheck"
)

// scriptDirs are the folders of Lua scripts the conventions hold for:
// this package's, the read path's and the live bus's (packages that
// import this one; their own tests run their scripts behind the keys
// guard and check their status codes).
var scriptDirs = []string{"lua", "readpath/lua", "../live/lua"}

// readScripts reads every script of scriptDirs, by file name (this
// package's bare, others' with their folder).
func readScripts(t *testing.T) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, dir := range scriptDirs {
		files, err := filepath.Glob(filepath.Join(dir, "*.lua"))
		if err != nil || len(files) == 0 {
			t.Fatalf("no scripts in %s/: %v", dir, err)
		}
		for _, f := range files {
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			name := filepath.Base(f)
			if dir != "lua" {
				name = filepath.ToSlash(filepath.Clean(f))
			}
			out[name] = string(b)
		}
	}
	return out
}

func TestEveryScriptNamesItsKeysAndArgumentsAtItsTop(t *testing.T) {
	for name, src := range readScripts(t) {
		lines := strings.Split(src, "\n")
		for i := luacheck.Header(lines); i < len(lines); i++ {
			code, _, _ := strings.Cut(lines[i], "--")
			if ref := luacheck.FixedArg.FindString(code); ref != "" {
				t.Errorf("%s:%d uses %s below the locals at its top: %s", name, i+1, ref, strings.TrimSpace(lines[i]))
			}
		}
	}
}

func TestScriptsAndGoNameTheSameStatusCodesAndRefusals(t *testing.T) {
	status := map[string]map[string]int{
		"sequence.lua": {"STATUS_NEW": seqStatusNew, "STATUS_DUPLICATE": seqStatusDuplicate,
			"STATUS_REJECTED": seqStatusRejected, "STATUS_NOT_DONE": seqStatusNotDone},
		"apply_inboxes.lua": {"STATUS_REPLAYED": inboxStatusReplayed, "STATUS_APPLIED": inboxStatusApplied,
			"STATUS_RECEIVE_ONLY": inboxStatusReceiveOnly, "STATUS_MOVED": inboxStatusMoved},
		"receipts_ack.lua":     {"STATUS_REFUSED": receiptsAckStatusRefused, "STATUS_RAISED": receiptsAckStatusRaised},
		"ack_cursor_raise.lua": {"STATUS_RAISED": ackRaiseStatusRaised, "STATUS_UNREGISTERED": ackRaiseStatusUnregistered, "STATUS_MOVED": ackRaiseStatusMoved},
	}
	refusals := map[string]string{"REFUSAL_MOVED": refusalMoved, "REFUSAL_FENCED": refusalFenced,
		"REFUSAL_DEDUPE": refusalDedupe, "REFUSAL_DEVICES": refusalDevices, "REFUSAL_UNINDEXED": RefusalUnindexed,
		"REFUSAL_HELD": refusalHeld, "REFUSAL_LIVE_DEVICES": refusalLiveDevices}
	unspelled := regexp.MustCompile(`error_reply\('OB`)
	scripts := readScripts(t)
	for name, src := range scripts {
		consts := luacheck.Constants(src)
		for lua, want := range status[name] {
			if got, err := strconv.Atoi(consts[lua]); err != nil || got != want {
				t.Errorf("%s names %s = %q, the Go side %d", name, lua, consts[lua], want)
			}
		}
		for lua, v := range consts {
			if !strings.HasPrefix(lua, "REFUSAL_") {
				continue
			}
			if want, ok := refusals[lua]; !ok || v != want {
				t.Errorf("%s names %s = %q, the Go side %q", name, lua, v, want)
			}
		}
		if loc := unspelled.FindStringIndex(src); loc != nil {
			t.Errorf("%s refuses with a word it does not name as a REFUSAL_ local: %s", name, src[loc[0]:min(loc[1]+20, len(src))])
		}
	}
	for name := range status {
		if _, ok := scripts[name]; !ok {
			t.Errorf("no script %s", name)
		}
	}
}
