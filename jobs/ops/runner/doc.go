// Package runner runs the external programs the engines use: each child in its own
// process group, killed as a whole group at its deadline, with a memory and a CPU-time
// limit (and, when asked, a cgroup) set before the program's first instruction, and
// the tail of its stderr kept for the log (never for clients). Supervisor keeps
// long-lived helpers built on it (the LibreOffice pool): started on first use,
// health-checked, restarted after a crash, a hang or a number of uses, with waiting for
// a free instance a separate budget from a run's own timeout.
//
// It imports the standard library and golang.org/x/sys only; never domain, HTTP, queue
// or database packages.
package runner
