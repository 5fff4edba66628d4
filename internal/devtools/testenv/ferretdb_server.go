package testenv

import (
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"time"
)

// FerretDBServer is a FerretDB process of its own, on a fixed loopback port and data
// directory, that can be killed and started again: for runs that restart the store under
// load (testenv.Mongo's server is shared by a whole test binary and never restarts). Its data
// survives restarts; it dies with the process that started it.
type FerretDBServer struct {
	ferretDBFiles
	port int

	mu   sync.Mutex
	proc *ferretDBProcess
	uri  string
}

// StartFerretDBServer builds ferretdbserver and starts it with its data under dir.
func StartFerretDBServer(dir string) (*FerretDBServer, error) {
	s := &FerretDBServer{ferretDBFiles: ferretDBFiles{bin: filepath.Join(dir, "ferretdbserver"), dataDir: filepath.Join(dir, "ferretdb")}}
	if err := os.MkdirAll(s.dataDir, 0o700); err != nil {
		return nil, err
	}
	if err := buildFerretDBServer(s.bin); err != nil {
		return nil, err
	}
	port, err := FreePort()
	if err != nil {
		return nil, err
	}
	s.port = port
	if err := s.Restart(); err != nil {
		return nil, err
	}
	startedServers.Store(s.URI(), s)
	return s, nil
}

// startedServers holds the servers StartFerretDBServer started, by URI, so that IndexIDs
// finds the files of a gateway's store from its configuration.
var startedServers sync.Map

// URI is the server's MongoDB connection string; it stays the same across restarts.
func (s *FerretDBServer) URI() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.uri
}

// Kill ends the server at once (SIGKILL), as a crash would, and waits for it to be gone.
func (s *FerretDBServer) Kill() { s.end(syscall.SIGKILL) }

// Stop ends the server gracefully (SIGTERM) and waits for it to be gone.
func (s *FerretDBServer) Stop() { s.end(syscall.SIGTERM) }

func (s *FerretDBServer) end(sig syscall.Signal) {
	s.mu.Lock()
	p := s.proc
	s.proc = nil
	s.mu.Unlock()
	if p == nil {
		return
	}
	_ = p.cmd.Process.Signal(sig)
	select {
	case <-p.exited:
	case <-time.After(10 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.exited
	}
	_ = p.stdin.Close()
}

// Restart starts a stopped or killed server again on its port, over the same data. It does
// nothing while the server runs.
func (s *FerretDBServer) Restart() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.proc != nil {
		return nil
	}
	var err error
	// The port was just released; retry briefly in case the kernel has not let go of it yet.
	for range 20 {
		var p *ferretDBProcess
		if p, err = startFerretDBProcess(s.bin, "-dir", s.dataDir, "-addr", fmt.Sprintf("127.0.0.1:%d", s.port)); err == nil {
			s.proc, s.uri = p, p.uri
			return nil
		}
		time.Sleep(100 * time.Millisecond)
	}
	return fmt.Errorf("testenv: start ferretdbserver on port %d: %w", s.port, err)
}
