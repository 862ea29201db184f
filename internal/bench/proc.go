package bench

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/skillhost/skillhost/internal/testenv"
)

// memOf reads a "Key:   123 kB" field of a /proc file, in bytes (0 if
// absent or unreadable).
func memOf(file, key string) int64 {
	f, err := os.Open(file)
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if v, ok := strings.CutPrefix(line, key+":"); ok {
			fields := strings.Fields(v)
			if len(fields) == 0 {
				return 0
			}
			n, _ := strconv.ParseInt(fields[0], 10, 64)
			return n << 10
		}
	}
	return 0
}

// procMem is the resident memory of a process tree.
type procMem struct {
	HostRSS, SkillsRSS int64 // VmRSS of the root, and summed over its descendants
	HostPSS, SkillsPSS int64 // proportional set size (shared pages split), same split
	Skills             int   // descendant processes counted
}

func treeMem(pid int) procMem {
	m := procMem{
		HostRSS: memOf(fmt.Sprintf("/proc/%d/status", pid), "VmRSS"),
		HostPSS: memOf(fmt.Sprintf("/proc/%d/smaps_rollup", pid), "Pss"),
	}
	for _, c := range testenv.Descendants(pid) {
		m.SkillsRSS += memOf(fmt.Sprintf("/proc/%d/status", c), "VmRSS")
		m.SkillsPSS += memOf(fmt.Sprintf("/proc/%d/smaps_rollup", c), "Pss")
		m.Skills++
	}
	return m
}

// machine describes where the numbers were taken.
type machine struct {
	CPU      string  `json:"cpu"`
	Cores    int     `json:"cores"`
	MemTotal int64   `json:"mem_total_bytes"`
	Kernel   string  `json:"kernel"`
	GoVer    string  `json:"go"`
	LoadAvg  string  `json:"loadavg_start"`
	LoadEnd  string  `json:"loadavg_end"`
	Commit   string  `json:"commit"`
	Dirty    bool    `json:"dirty"`
	Started  string  `json:"started"`
	Took     float64 `json:"took_s"`
}

func cpuModel() string {
	f, err := os.Open("/proc/cpuinfo")
	if err != nil {
		return "unknown"
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if k, v, ok := strings.Cut(sc.Text(), ":"); ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return "unknown"
}

func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return ""
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return ""
	}
	return strings.Join(f[:3], " ")
}

func kernel() string {
	b, err := os.ReadFile("/proc/sys/kernel/osrelease")
	if err != nil {
		return ""
	}
	return "Linux " + strings.TrimSpace(string(b))
}

// cpuTime is the user+system CPU a process has used.
func cpuTime(pid int) time.Duration {
	user, sys := cpuSplit(pid)
	return user + sys
}

// cpuSplit is the user and the system CPU a process has used, from
// /proc/PID/stat (assuming the usual 100 clock ticks per second). The
// system share is worth showing on its own: on this project's VMs the
// kernel's first use of memory the guest has not touched before is charged
// there, and it can outweigh what the process itself does.
func cpuSplit(pid int) (user, sys time.Duration) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, 0
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, 0
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 13 {
		return 0, 0
	}
	// After the command name: state(0) ppid(1) ... utime(11) stime(12).
	ut, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(ut) * 10 * time.Millisecond, time.Duration(st) * 10 * time.Millisecond
}

// treeCPU is the CPU used so far by pid and, summed, by its descendants.
func treeCPU(pid int) (host, children time.Duration) {
	host = cpuTime(pid)
	for _, c := range testenv.Descendants(pid) {
		children += cpuTime(c)
	}
	return host, children
}
