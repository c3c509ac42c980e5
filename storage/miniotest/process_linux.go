package miniotest

import (
	"os"
	"os/exec"
	"runtime"
	"syscall"
)

// startProcess starts cmd so that the kernel kills it when this process ends, however it
// ends. Pdeathsig fires when the *thread* that forked the child exits, so the fork runs
// on a goroutine locked to its thread, and that goroutine stays in cmd.Wait for the
// child's whole life: the thread ends only with the process (or after the child).
func startProcess(cmd *exec.Cmd, exited chan struct{}, log *os.File) error {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	started := make(chan error, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread dies with this goroutine
		err := cmd.Start()
		started <- err
		if err == nil {
			_ = cmd.Wait()
		}
		log.Close()
		close(exited)
	}()
	return <-started
}

func processAlive(pid int) bool {
	return syscall.Kill(pid, 0) == nil
}
