package bench

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// ClockTicks is USER_HZ, the unit of /proc's times: 100 on every Linux architecture Go
// runs on.
const ClockTicks = 100

// ProcTimes are one process's CPU times.
type ProcTimes struct {
	PPID           int
	Self, Children float64 // seconds: its own, and its reaped children's
}

// ReadProcs reads every live process's CPU times, by pid.
func ReadProcs() map[int]ProcTimes {
	out := map[int]ProcTimes{}
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		raw, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		i := bytes.LastIndexByte(raw, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(string(raw[i+1:]))
		if len(f) < 15 {
			continue
		}
		num := func(k int) float64 { v, _ := strconv.ParseFloat(f[k], 64); return v / ClockTicks }
		ppid, _ := strconv.Atoi(f[1])
		out[pid] = ProcTimes{PPID: ppid, Self: num(11) + num(12), Children: num(13) + num(14)}
	}
	return out
}

// TreeCPU is the CPU time of pid and of every process under it, alive or reaped (a
// child's time moves to its parent's when it is reaped, so the sum only grows).
func TreeCPU(procs map[int]ProcTimes, pid int) float64 {
	if pid == 0 {
		return 0
	}
	kids := Children(procs)
	var sum float64
	var walk func(p int)
	walk = func(p int) {
		t, ok := procs[p]
		if !ok {
			return
		}
		sum += t.Self + t.Children
		for _, k := range kids[p] {
			walk(k)
		}
	}
	walk(pid)
	return sum
}

// Children lists each process's children, by parent pid.
func Children(procs map[int]ProcTimes) map[int][]int {
	kids := map[int][]int{}
	for p, t := range procs {
		kids[t.PPID] = append(kids[t.PPID], p)
	}
	return kids
}
