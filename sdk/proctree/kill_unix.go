//go:build unix

package proctree

import (
	"os"
	"sort"
	"syscall"
)

// Kill kills (SIGKILL) the process groups groups, the processes roots, and
// every descendant of any of them, also one that left its group. It never
// signals the calling process or its own group. It returns how many
// processes it signalled.
//
// Children go before their parents: a process that dies hands its children
// to another parent, and the link to them would be lost; a child that is
// already dying loses nothing. Kill looks again for children forked
// meanwhile. It does not stop the tree first: SIGSTOP in a process group
// whose parent is gone (an orphaned group, as a skill's is once its host
// died) makes the kernel send the whole group SIGHUP and SIGCONT, and a
// skill killed by that SIGHUP would hand its children away before Kill
// found them.
func Kill(groups, roots []int) int {
	self, ownGroup := os.Getpid(), syscall.Getpgrp()
	inGroup, isRoot := map[int]bool{}, map[int]bool{}
	for _, g := range groups {
		if g > 1 && g != ownGroup { // never kill(-1) or kill(-0)
			inGroup[g] = true
		}
	}
	for _, r := range roots {
		if r > 1 {
			isRoot[r] = true
		}
	}
	killed := map[int]bool{}
	for round := 0; round < 8; round++ {
		procs := List()
		parent := map[int]int{}
		tree := map[int]bool{}
		for _, p := range procs {
			parent[p.PID] = p.PPID
		}
		// The tree: the roots, the groups' members and, transitively, the
		// children of any of them.
		for changed := true; changed; {
			changed = false
			for _, p := range procs {
				if tree[p.PID] || p.PID <= 1 || p.PID == self || p.Zombie() {
					continue
				}
				if isRoot[p.PID] || inGroup[p.PGID] || tree[p.PPID] || isRoot[p.PPID] {
					tree[p.PID] = true
					changed = true
				}
			}
		}
		var fresh []int
		for pid := range tree {
			if !killed[pid] {
				fresh = append(fresh, pid)
			}
		}
		if len(fresh) == 0 {
			break
		}
		depth := func(pid int) int {
			d := 0
			for p := parent[pid]; tree[p] && d < len(tree); p = parent[p] {
				d++
			}
			return d
		}
		sort.Slice(fresh, func(i, j int) bool { return depth(fresh[i]) > depth(fresh[j]) })
		for _, pid := range fresh {
			_ = syscall.Kill(pid, syscall.SIGKILL)
			killed[pid] = true
		}
	}
	for g := range inGroup {
		_ = syscall.Kill(-g, syscall.SIGKILL) // members List could not see
	}
	return len(killed)
}
