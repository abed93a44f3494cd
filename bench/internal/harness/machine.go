package harness

import (
	"bufio"
	"os"
	"os/exec"
	"runtime"
	"strings"
)

// Machine describes where a benchmark ran.
type Machine struct {
	Uname    string `json:"uname"`
	CPU      string `json:"cpu"`
	Cores    int    `json:"cores"`
	MemTotal string `json:"mem_total"`
	Go       string `json:"go"`
}

// ThisMachine reads uname -a, /proc/cpuinfo and /proc/meminfo.
func ThisMachine() Machine {
	m := Machine{Cores: runtime.NumCPU(), Go: runtime.Version()}
	if out, err := exec.Command("uname", "-a").Output(); err == nil {
		m.Uname = strings.TrimSpace(string(out))
	}
	m.CPU = procField("/proc/cpuinfo", "model name")
	m.MemTotal = procField("/proc/meminfo", "MemTotal")
	return m
}

// procField is the value of the first "name: value" line of a /proc file.
func procField(path, name string) string {
	line := FirstLine(path, func(line string) bool {
		k, _, ok := strings.Cut(line, ":")
		return ok && strings.TrimSpace(k) == name
	})
	_, v, _ := strings.Cut(line, ":")
	return strings.TrimSpace(v)
}

// FirstLine is the first line of the file at path that match accepts, or
// "" when none does or the file cannot be read: the files read so (/proc,
// a server's log) are looked at for what they say, not required.
func FirstLine(path string, match func(line string) bool) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if match(sc.Text()) {
			return sc.Text()
		}
	}
	return ""
}
