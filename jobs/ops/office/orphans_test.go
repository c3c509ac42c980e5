package office_test

import (
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/filemill/filemill/domain/eventually"
	"github.com/filemill/filemill/jobs/ops/office"
)

// TestKillOrphans: LibreOffice processes left by a pool whose worker was killed
// (reparented to init) are ended; those of a live pool (still a child) are not.
func TestKillOrphans(t *testing.T) {
	// An orphan: started through a shell that exits at once, so init adopts it.
	pidFile := t.TempDir() + "/pid"
	orphan := exec.Command("bash", "-c", `(exec -a "soffice -env:UserInstallation=file:///tmp/filemill-office-test/profile-0" sleep 300) & echo $! > `+pidFile)
	orphan.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} // as the pool's runner starts them
	if err := orphan.Run(); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatal(err)
	}
	orphanPID, _ := strconv.Atoi(strings.TrimSpace(string(raw)))
	defer syscall.Kill(orphanPID, syscall.SIGKILL)

	// A live instance: a child of this process.
	live := exec.Command("sleep", "300")
	live.Args[0] = "soffice -env:UserInstallation=file:///tmp/filemill-office-live/profile-0"
	if err := live.Start(); err != nil {
		t.Fatal(err)
	}
	defer live.Process.Kill()

	eventually.True(t, "the orphan to be found", func() bool { return office.KillOrphans() > 0 })
	eventually.True(t, "the orphan to stop", func() bool { return syscall.Kill(orphanPID, 0) != nil })
	if err := live.Process.Signal(syscall.Signal(0)); err != nil {
		t.Fatalf("the live instance was killed: %v", err)
	}
}
