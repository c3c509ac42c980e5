// Package memcg bounds the memory of a child process tree with a cgroup of its own:
// cgroup v2 where /sys/fs/cgroup is the unified hierarchy and offers the memory
// controller, else a v1 memory hierarchy at /sys/fs/cgroup/memory. Past its bound the
// kernel kills in the group, never the worker, and the group counts the kill.
//
// A worker keeps its groups under one parent named for its process (filemill-<pid>),
// made inside the worker's own cgroup so that whatever bounds the worker bounds them
// too. The parent goes when its last user closes it; parents of workers that died are
// removed, their processes killed, when the next worker opens its own.
//
// It imports the standard library and golang.org/x/sys only.
package memcg
