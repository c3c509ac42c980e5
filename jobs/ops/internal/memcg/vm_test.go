package memcg_test

import (
	"bytes"
	"context"
	"debug/elf"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// vmInit boots the virtual machine: the kernel's file systems, cgroup v2 alone at
// /sys/fs/cgroup (as on a host booted with the unified hierarchy), then this package's
// tests twice. First in the root group, as a worker that is its container's only
// process sees it; then in a group of its own with the memory controller handed down,
// as systemd starts a service with Delegate=yes (the worker alone in it): the worker
// must move itself into a leaf before it can hand the controller on to its groups.
const vmInit = `#!/bin/sh
mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t devtmpfs dev /dev
mount -t cgroup2 cgroup2 /sys/fs/cgroup
mount -t tmpfs tmp /tmp
cd /tmp
export CI=true FILEMILL_MEMCG_WANT=v2
/memcg.test -test.v -test.count=1 -test.skip '^TestCgroupV2InAVirtualMachine$' 2>&1
echo "filemill-vm: root group: exit $?"
echo +memory > /sys/fs/cgroup/cgroup.subtree_control
mkdir /sys/fs/cgroup/service
sh -c 'echo $$ > /sys/fs/cgroup/service/cgroup.procs && exec /memcg.test -test.v -test.count=1 -test.skip "^TestCgroupV2InAVirtualMachine$"' 2>&1
echo "filemill-vm: delegated group: exit $?"
poweroff -f
`

// This host's memory controller may be cgroup v1's (as on the machines this suite
// runs on), where the tests above run v1's path: the v2 path runs here in a virtual
// machine whose kernel mounts cgroup v2 alone. Debian's kernel, busybox and QEMU (with
// software emulation: nested KVM is not everywhere) are what it needs.
func TestCgroupV2InAVirtualMachine(t *testing.T) {
	need := func(what string, err error) {
		if err == nil {
			return
		}
		if os.Getenv("CI") != "" {
			t.Fatalf("%s: %v (CI installs it: .ci/ensure-deps)", what, err)
		}
		t.Skipf("%s: %v", what, err)
	}
	qemu, err := exec.LookPath("qemu-system-x86_64")
	need("qemu-system-x86_64 (Debian: qemu-system-x86)", err)
	busybox, err := exec.LookPath("busybox")
	need("busybox (Debian: busybox-static)", err)
	kernel, err := newestKernel()
	need("a kernel in /boot (Debian: linux-image-amd64)", err)
	if runtime.GOARCH != "amd64" {
		t.Skip("the virtual machine is an x86-64 one")
	}
	// The machine has no libc: a dynamically linked busybox asks for its interpreter.
	if bb, err := elf.Open(busybox); err == nil {
		defer bb.Close()
		for _, p := range bb.Progs {
			if p.Type == elf.PT_INTERP {
				t.Fatalf("%s is not statically linked (Debian: busybox-static)", busybox)
			}
		}
	}

	dir := t.TempDir()
	bin := filepath.Join(dir, "memcg.test")
	build := exec.Command("go", "test", "-c", "-o", bin, ".")
	build.Env = append(os.Environ(), "CGO_ENABLED=0") // static: the machine has no libc
	out, err := build.CombinedOutput()
	require.NoError(t, err, "%s", out)

	initrd := filepath.Join(dir, "initrd")
	require.NoError(t, writeInitramfs(initrd, map[string]archived{
		"init":         {mode: 0o755, data: []byte(vmInit)},
		"memcg.test":   {mode: 0o755, path: bin},
		"bin/busybox":  {mode: 0o755, path: busybox},
		"bin/sh":       {link: "busybox"},
		"bin/mount":    {link: "busybox"},
		"bin/mkdir":    {link: "busybox"},
		"bin/echo":     {link: "busybox"},
		"bin/poweroff": {link: "busybox"},
		"bin/true":     {link: "busybox"},
		"bin/sleep":    {link: "busybox"},
	}, "bin", "proc", "sys", "dev", "tmp"))

	// The suite's own timeout bounds the machine; it powers itself off when done.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	vm := exec.CommandContext(ctx, qemu, "-accel", "tcg", "-m", "512", "-smp", "1", "-nographic", "-no-reboot",
		"-kernel", kernel, "-initrd", initrd,
		"-append", "console=ttyS0 quiet panic=-1 PATH=/bin")
	var console bytes.Buffer
	vm.Stdout, vm.Stderr = &console, &console
	vm.Stdin = strings.NewReader("")
	t0 := time.Now()
	require.NoError(t, vm.Run(), "%s", console.String())
	t.Logf("the machine booted, ran the tests twice and powered off in %s", time.Since(t0).Round(time.Millisecond))

	text := strings.ReplaceAll(console.String(), "\r", "")
	for _, group := range []string{"root group", "delegated group"} {
		m := regexp.MustCompile(`filemill-vm: ` + group + `: exit (\d+)`).FindStringSubmatch(text)
		require.NotNil(t, m, "the tests did not finish in the %s:\n%s", group, text)
		require.Equal(t, "0", m[1], "the tests failed in the %s:\n%s", group, text)
	}
	// Each test ran in each group (on cgroup v2: memcgtest.Open checks).
	for _, name := range []string{"TestGroupKillsPastItsBound", "TestRemoveKillsWhatIsLeft", "TestSetLimitMovesTheBound",
		"TestOpenRemovesParentsOfDeadWorkers"} {
		require.Equal(t, 2, strings.Count(text, "--- PASS: "+name+" "), "%s:\n%s", name, text)
	}
}

// newestKernel is a kernel image in /boot, the last by name (any recent kernel has
// cgroup v2 with its memory controller).
func newestKernel() (string, error) {
	ks, _ := filepath.Glob("/boot/vmlinuz-*")
	if len(ks) == 0 {
		return "", os.ErrNotExist
	}
	return slices.Max(ks), nil
}

// archived is an entry of an initramfs: bytes, a file's contents, or a symbolic link.
type archived struct {
	mode uint32
	data []byte
	path string
	link string
}

// writeInitramfs writes an uncompressed initramfs (cpio, "newc" format) holding dirs
// and files.
func writeInitramfs(name string, files map[string]archived, dirs ...string) error {
	f, err := os.Create(name)
	if err != nil {
		return err
	}
	defer f.Close()
	ino := 0
	entry := func(path string, mode uint32, data []byte) error {
		ino++
		hdr := fmt.Sprintf("070701%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X",
			ino, mode, 0, 0, 1, 0, len(data), 0, 0, 0, 0, len(path)+1, 0)
		var b bytes.Buffer
		b.WriteString(hdr)
		b.WriteString(path)
		b.WriteByte(0)
		for b.Len()%4 != 0 {
			b.WriteByte(0)
		}
		b.Write(data)
		for b.Len()%4 != 0 {
			b.WriteByte(0)
		}
		_, err := f.Write(b.Bytes())
		return err
	}
	for _, d := range dirs {
		if err := entry(d, 0o040755, nil); err != nil {
			return err
		}
	}
	for _, n := range slices.Sorted(maps.Keys(files)) {
		a := files[n]
		var err error
		switch {
		case a.link != "":
			err = entry(n, 0o120777, []byte(a.link))
		case a.path != "":
			var data []byte
			if data, err = os.ReadFile(a.path); err == nil {
				err = entry(n, 0o100000|a.mode, data)
			}
		default:
			err = entry(n, 0o100000|a.mode, a.data)
		}
		if err != nil {
			return err
		}
	}
	if err := entry("TRAILER!!!", 0, nil); err != nil {
		return err
	}
	_, err = io.WriteString(f, strings.Repeat("\x00", 512))
	return err
}
