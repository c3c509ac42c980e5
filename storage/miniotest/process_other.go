//go:build !linux

package miniotest

import (
	"os"
	"os/exec"
)

// startProcess starts cmd; off Linux there is no parent-death signal, so a server
// started here outlives a test binary that exits without Shutdown.
func startProcess(cmd *exec.Cmd, exited chan struct{}, log *os.File) error {
	if err := cmd.Start(); err != nil {
		return err
	}
	go func() {
		_ = cmd.Wait()
		log.Close()
		close(exited)
	}()
	return nil
}

// processAlive cannot tell here, so stale data is left rather than risk a live server's.
func processAlive(int) bool { return true }
