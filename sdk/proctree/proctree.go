package proctree

import (
	"bytes"
	"os"
	"strconv"
)

// Proc is what /proc/<pid>/stat says of one process.
type Proc struct {
	PID, PPID, PGID, SID int
	State                byte   // 'R', 'S', 'D', 'Z' (zombie), 'T' (stopped), …
	Comm                 string // the command name, at most 15 bytes
}

// Zombie reports whether the process has exited and waits to be reaped.
func (p Proc) Zombie() bool { return p.State == 'Z' }

// List returns every process in /proc. A process that exits while List
// reads is left out.
func List() []Proc {
	d, err := os.Open("/proc")
	if err != nil {
		return nil
	}
	names, _ := d.Readdirnames(-1)
	d.Close()
	out := make([]Proc, 0, len(names))
	for _, name := range names {
		pid, err := strconv.Atoi(name)
		if err != nil {
			continue
		}
		if p, ok := Stat(pid); ok {
			out = append(out, p)
		}
	}
	return out
}

// Stat reads one process; false if it does not exist (or /proc does not).
func Stat(pid int) (Proc, bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return Proc{}, false
	}
	return Parse(pid, b)
}

// Parse reads "pid (comm) state ppid pgrp session …". The command may hold
// spaces and parentheses, so the fields start after the last ')'.
func Parse(pid int, stat []byte) (Proc, bool) {
	open, end := bytes.IndexByte(stat, '('), bytes.LastIndexByte(stat, ')')
	if open < 0 || end < open {
		return Proc{}, false
	}
	f := bytes.Fields(stat[end+1:])
	if len(f) < 4 || len(f[0]) != 1 {
		return Proc{}, false
	}
	ppid, err1 := strconv.Atoi(string(f[1]))
	pgid, err2 := strconv.Atoi(string(f[2]))
	sid, err3 := strconv.Atoi(string(f[3]))
	if err1 != nil || err2 != nil || err3 != nil {
		return Proc{}, false
	}
	return Proc{PID: pid, PPID: ppid, PGID: pgid, SID: sid, State: f[0][0], Comm: string(stat[open+1 : end])}, true
}

// Children maps each pid to the pids of its live (not zombie) children.
func Children(procs []Proc) map[int][]int {
	out := map[int][]int{}
	for _, p := range procs {
		if !p.Zombie() {
			out[p.PPID] = append(out[p.PPID], p.PID)
		}
	}
	return out
}
