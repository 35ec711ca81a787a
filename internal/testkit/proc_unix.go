//go:build unix

package testkit

import (
	"bytes"
	"os"
	"os/exec"
	"strconv"
	"syscall"
)

// setProcessGroup makes cmd the leader of a new process group, so that
// stopping it also stops the helpers it starts without a session of their
// own (git daemon's upload-pack and receive-pack children).
func setProcessGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
}

// terminate signals the process group p leads and each of others, with
// SIGTERM, or SIGKILL when force is set.
func terminate(p *os.Process, others []int, force bool) {
	sig := syscall.SIGTERM
	if force {
		sig = syscall.SIGKILL
	}
	_ = syscall.Kill(-p.Pid, sig)
	for _, pid := range others {
		_ = syscall.Kill(pid, sig)
	}
}

// descendants returns the processes below pid, read from /proc. They
// matter because sshd puts each connection, and the command it runs, in a
// session of its own, out of reach of a signal to sshd's process group.
// Without /proc (non-Linux systems) it returns nil.
func descendants(pid int) []int {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	children := map[int][]int{}
	for _, e := range ents {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if ppid, _, ok := procStat(p); ok {
			children[ppid] = append(children[ppid], p)
		}
	}
	var out []int
	queue := []int{pid}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		for _, c := range children[p] {
			out = append(out, c)
			queue = append(queue, c)
		}
	}
	return out
}

// alive reports whether pid still runs. A zombie does not: once
// reparented it is init's to reap, which a container's init may never do.
func alive(pid int) bool {
	if _, state, ok := procStat(pid); ok {
		return state != 'Z' && state != 'X'
	}
	if _, err := os.Stat("/proc/self"); err == nil {
		return false // /proc works and has no such process
	}
	return syscall.Kill(pid, 0) == nil
}

// procStat reads the parent and the state of pid from /proc/pid/stat.
func procStat(pid int) (ppid int, state byte, ok bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, 0, false
	}
	// "pid (comm) state ppid ...": comm may hold spaces and parentheses,
	// so the fields start after the last ')'.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, 0, false
	}
	f := bytes.Fields(b[i+1:])
	if len(f) < 2 || len(f[0]) != 1 {
		return 0, 0, false
	}
	ppid, err = strconv.Atoi(string(f[1]))
	if err != nil {
		return 0, 0, false
	}
	return ppid, f[0][0], true
}
