package testenv

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// RedisServer is a redis-server process owned by a single test.
type RedisServer struct {
	t    testing.TB // nil for a node of a cluster, which is never restarted alone
	bin  string
	dir  string
	port int
	// busPort is the cluster bus port of a node started in cluster mode, 0 otherwise. It is
	// chosen like the client port: Redis's default (port + 10000) may be out of range or taken.
	busPort int

	mu     sync.Mutex
	cmd    *exec.Cmd
	exited chan struct{}
	logs   *syncBuffer
}

// Redis starts a dedicated redis-server on a free loopback port, waits until
// it answers PING and stops it when the test ends.
func Redis(t testing.TB) *RedisServer {
	t.Helper()
	s, err := startRedisServer(t.TempDir(), false)
	if err != nil {
		t.Fatal(err)
	}
	s.t = t
	t.Cleanup(s.Stop)
	return s
}

// StartRedisServer starts a redis-server outside a test (the bench and load commands), keeping
// its files in dir, on a free loopback port. The caller stops it with Stop.
func StartRedisServer(dir string) (*RedisServer, error) {
	return startRedisServer(dir, false)
}

// startRedisServer starts a redis-server keeping its files in dir, on a free loopback port
// (and, in cluster mode, a free cluster bus port). The caller stops it.
func startRedisServer(dir string, cluster bool) (*RedisServer, error) {
	bin, err := findRedisServer()
	if err != nil {
		return nil, err
	}
	s := &RedisServer{bin: bin, dir: dir}
	// Another process may grab a port between probing and redis binding it,
	// so a failed start is retried on new ports.
	var lastErr error
	for range 5 {
		if s.port, err = FreePort(); err != nil {
			return nil, fmt.Errorf("testenv: find free port: %w", err)
		}
		if cluster {
			if s.busPort, err = FreePort(); err != nil {
				return nil, fmt.Errorf("testenv: find free port: %w", err)
			}
			if s.busPort == s.port {
				lastErr = fmt.Errorf("port %d probed twice", s.port)
				continue
			}
		}
		if lastErr = s.start(); lastErr == nil {
			return s, nil
		}
	}
	return nil, fmt.Errorf("testenv: start redis-server: %w", lastErr)
}

// Addr returns host:port of the server.
func (s *RedisServer) Addr() string {
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(s.port))
}

// URL returns a redis:// URL selecting database 0.
func (s *RedisServer) URL() string {
	return "redis://" + s.Addr() + "/0"
}

// Stop kills the server and waits for it to exit, so the port is free
// afterwards. Stopping a stopped server is a no-op.
func (s *RedisServer) Stop() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd == nil {
		return
	}
	_ = s.cmd.Process.Kill()
	<-s.exited
	s.cmd = nil
}

// Start restarts a stopped server on the same port (its data is gone, as
// persistence is disabled). It fails the test if the server cannot start, so
// call it from the test goroutine.
func (s *RedisServer) Start() {
	s.t.Helper()
	if err := s.Restart(); err != nil {
		s.t.Fatal(err)
	}
}

// Restart starts a stopped server on the same port, like Start, for callers outside a test.
func (s *RedisServer) Restart() error {
	var err error
	// The port was just released by Stop; retry briefly in case the kernel or
	// another process has not let go of it yet.
	for range 20 {
		if err = s.start(); err == nil {
			return nil
		}
		time.Sleep(50 * time.Millisecond)
	}
	return fmt.Errorf("testenv: restart redis-server on port %d: %w", s.port, err)
}

func (s *RedisServer) start() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd != nil {
		return nil
	}
	logs := &syncBuffer{}
	cmd := exec.Command(s.bin,
		"--port", strconv.Itoa(s.port),
		"--bind", "127.0.0.1",
		"--save", "",
		"--appendonly", "no",
		"--dir", s.dir,
		"--daemonize", "no",
	)
	if s.busPort != 0 {
		cmd.Args = append(cmd.Args,
			"--cluster-enabled", "yes",
			"--cluster-config-file", filepath.Join(s.dir, "nodes.conf"),
			"--cluster-port", strconv.Itoa(s.busPort),
		)
	}
	cmd.Stdout = logs
	cmd.Stderr = logs
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return err
	}
	exited := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(exited)
	}()

	deadline := time.Now().Add(10 * time.Second)
	for {
		if err := pingRedis(s.Addr(), cmd.Process.Pid); err == nil {
			s.cmd, s.exited, s.logs = cmd, exited, logs
			return nil
		}
		select {
		case <-exited:
			return fmt.Errorf("redis-server exited during startup: %s", strings.TrimSpace(logs.String()))
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			_ = cmd.Process.Kill()
			<-exited
			return fmt.Errorf("redis-server did not answer PING within 10s: %s", strings.TrimSpace(logs.String()))
		}
	}
}

// pingRedis checks that the server at addr is ready and is the process with
// the given pid: after a lost port race, a PING alone could be answered by a
// redis-server that belongs to someone else.
func pingRedis(addr string, pid int) error {
	conn, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return err
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(time.Second))
	if _, err := conn.Write([]byte("INFO server\r\n")); err != nil {
		return err
	}
	r := bufio.NewReader(conn)
	header, err := r.ReadString('\n')
	if err != nil {
		return err
	}
	// Anything but a bulk string (e.g. -LOADING) means not ready yet.
	if !strings.HasPrefix(header, "$") {
		return fmt.Errorf("unexpected INFO reply %q", header)
	}
	n, err := strconv.Atoi(strings.TrimSpace(header[1:]))
	if err != nil {
		return fmt.Errorf("unexpected INFO reply %q", header)
	}
	body := make([]byte, n)
	if _, err := io.ReadFull(r, body); err != nil {
		return err
	}
	if !strings.Contains(string(body), "\nprocess_id:"+strconv.Itoa(pid)+"\r") {
		return fmt.Errorf("port %s is served by another redis-server", addr)
	}
	return nil
}

func findRedisServer() (string, error) {
	if p, err := exec.LookPath("redis-server"); err == nil {
		return p, nil
	}
	for _, p := range []string{"/usr/bin/redis-server", "/usr/sbin/redis-server", "/usr/local/bin/redis-server"} {
		if isFile(p) {
			return p, nil
		}
	}
	return "", fmt.Errorf("testenv: redis-server not found in PATH, /usr/bin or /usr/sbin; " +
		"tests need a real Redis: install it with `apt-get install -y redis-server`")
}

func isFile(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && !fi.IsDir()
}

// FreePort returns a loopback TCP port that was free a moment ago, for a server that must be
// told its port before it starts (and keep it across restarts).
func FreePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// syncBuffer collects child process output that is written by os/exec's copy
// goroutine and read by us for error messages.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	// Only the tail matters for diagnostics; keep memory bounded.
	if b.buf.Len() > 1<<20 {
		b.buf.Reset()
	}
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// FlushAll empties the server, as an operator's FLUSHALL or a restart without persistence
// would.
func (s *RedisServer) FlushAll() error {
	c := redis.NewClient(&redis.Options{Addr: s.Addr()})
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return c.FlushAll(ctx).Err()
}
