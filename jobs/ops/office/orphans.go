package office

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// A worker killed outright (SIGKILL, an OOM kill) cannot stop its LibreOffice
// instances: they live on, orphaned, each holding a few hundred megabytes. They are
// known by the profile directory of a filemill pool on their command line, and by
// having lost their parent (they were reparented to init). KillOrphans ends them, with
// their process groups; a new pool calls it before it starts instances.
const orphanMarker = "filemill-office-"

// KillOrphans kills the LibreOffice processes of dead filemill pools on this host and
// returns how many it found. Instances of live pools, whose parent is their helper, are
// left alone.
func KillOrphans() int {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return 0
	}
	n := 0
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		cmdline, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil || !bytes.Contains(cmdline, []byte(orphanMarker)) || !bytes.Contains(cmdline, []byte("soffice")) &&
			!bytes.Contains(cmdline, []byte("oosplash")) && !bytes.Contains(cmdline, []byte("helper.py")) {
			continue
		}
		if !orphaned(e.Name()) {
			continue
		}
		// Instances run in process groups of their own; never this process's.
		if pgid, err := syscall.Getpgid(pid); err == nil && pgid > 1 && pgid != syscall.Getpgrp() {
			_ = syscall.Kill(-pgid, syscall.SIGKILL)
		}
		_ = syscall.Kill(pid, syscall.SIGKILL)
		n++
	}
	return n
}

// orphaned reports whether a process's parent is gone: it was reparented to init.
func orphaned(pid string) bool {
	stat, err := os.ReadFile(filepath.Join("/proc", pid, "stat"))
	if err != nil {
		return false
	}
	// The command may hold spaces and parentheses: the fields follow the last ')'.
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 {
		return false
	}
	fields := strings.Fields(string(stat[i+1:]))
	return len(fields) >= 2 && fields[1] == "1"
}
