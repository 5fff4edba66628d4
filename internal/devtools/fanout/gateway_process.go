package fanout

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/msggate/msggate/internal/devtools/testenv"
)

// instance is one gateway, a child process on a loopback port of its own.
type instance struct {
	name string
	url  string
	log  string
	cmd  *exec.Cmd
	done chan struct{}
	// restart starts the gateway again as it was started (on a new port), once stopped.
	restart func(context.Context) (*instance, error)
}

// startWithin bounds how long a gateway may take to answer /readyz after it starts.
const startWithin = 90 * time.Second

// serveFlags open a gateway to the bench's load: every device connects from 127.0.0.1, as
// fast as the gateway takes them, and one member sends all the messages. The limits that
// would refuse that (pending connections per address, the accept pacing, the rate limits)
// guard against clients a bench does not have; the pacing 1013 closes are still retried.
var serveFlags = []string{
	"-playground=false", "-rate-limit", "-1", "-anonymous-rate-limit", "-1",
	"-ws-pending-per-address", "-1", "-ws-accept-rate", "-1",
}

// startGateway starts instance name of command with its files under dir and waits until it
// is ready (its store prepared). An empty mongoURI runs it on its embedded store (FerretDB
// on SQLite in its own process, under its data directory).
func startGateway(ctx context.Context, name, dir string, command, env []string, mongoURI, redisURL string) (*instance, error) {
	port, err := testenv.FreePort()
	if err != nil {
		return nil, err
	}
	addr := "127.0.0.1:" + strconv.Itoa(port)
	g := &instance{name: name, url: "http://" + addr, log: filepath.Join(dir, name+".log"), done: make(chan struct{}),
		restart: func(ctx context.Context) (*instance, error) {
			return startGateway(ctx, name, dir, command, env, mongoURI, redisURL)
		}}
	if _, err := os.Stat(g.log); err == nil {
		g.log = filepath.Join(dir, name+"-restarted.log") // the same gateway, started again
	}
	argv := append(append([]string{}, command...), "serve", "-addr", addr, "-data-dir", filepath.Join(dir, name), "-redis-url", redisURL)
	if mongoURI != "" {
		argv = append(argv, "-mongo-uri", mongoURI)
	}
	argv = append(argv, serveFlags...)
	logFile, err := os.Create(g.log)
	if err != nil {
		return nil, err
	}
	g.cmd = exec.Command(argv[0], argv[1:]...)
	g.cmd.Env = append(os.Environ(), env...)
	g.cmd.Stdout, g.cmd.Stderr = logFile, logFile
	// A bench that dies takes its gateways with it.
	g.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := g.cmd.Start(); err != nil {
		logFile.Close()
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	go func() {
		_ = g.cmd.Wait()
		logFile.Close()
		close(g.done)
	}()
	client := &http.Client{Timeout: time.Second}
	deadline := time.Now().Add(startWithin)
	for {
		select {
		case <-g.done:
			return nil, fmt.Errorf("%s exited while starting; its log (%s) ends with:\n%s", name, g.log, tail(g.log, 20))
		case <-ctx.Done():
			g.stop()
			return nil, ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
		if resp, err := client.Get(g.url + "/readyz"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return g, nil
			}
		}
		if time.Now().After(deadline) {
			g.stop()
			return nil, fmt.Errorf("%s was not ready within %s; its log (%s) ends with:\n%s", name, startWithin, g.log, tail(g.log, 20))
		}
	}
}

// rss returns the gateway process's resident memory as the kernel counts it (VmRSS): the
// Go heap and stacks, and what the runtime has not returned yet, the binary's pages, and on
// the embedded store the store's own memory.
func (g *instance) rss() (int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", g.cmd.Process.Pid))
	if err != nil {
		return 0, fmt.Errorf("%s: %w", g.name, err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kib, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			if err != nil {
				return 0, fmt.Errorf("%s: VmRSS %q: %w", g.name, v, err)
			}
			return kib << 10, nil
		}
	}
	return 0, fmt.Errorf("%s: /proc/%d/status has no VmRSS", g.name, g.cmd.Process.Pid)
}

// cpu returns the CPU time (user and system) the gateway process has used so far.
func (g *instance) cpu() (time.Duration, error) {
	return processCPU(g.cmd.Process.Pid)
}

// processCPU reads a process's user and system CPU time from /proc/<pid>/stat.
func processCPU(pid int) (time.Duration, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// The command name, in parentheses, may hold spaces: the fields counted follow it.
	s := string(b)
	fields := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(fields) < 13 {
		return 0, fmt.Errorf("/proc/%d/stat: %d fields after the name", pid, len(fields))
	}
	// utime and stime, fields 14 and 15 of stat(5), in clock ticks of 1/100 s on Linux.
	var ticks int64
	for _, f := range fields[11:13] {
		n, err := strconv.ParseInt(f, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("/proc/%d/stat: %w", pid, err)
		}
		ticks += n
	}
	return time.Duration(ticks) * 10 * time.Millisecond, nil
}

// loadAverage returns the machine's one-minute load average.
func loadAverage() float64 {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return 0
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return 0
	}
	v, _ := strconv.ParseFloat(f[0], 64)
	return v
}

// stop asks the gateway to shut down and kills it if it has not within ten seconds.
func (g *instance) stop() {
	_ = g.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-g.done:
	case <-time.After(10 * time.Second):
		_ = g.cmd.Process.Kill()
		<-g.done
	}
}

// runChild runs command with args to its end, its output into log, for the steps the bench
// takes as an operator would (making the group).
func runChild(ctx context.Context, log string, command, env []string, args ...string) error {
	argv := append(append([]string{}, command...), args...)
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Env = append(os.Environ(), env...)
	out, err := os.Create(log)
	if err != nil {
		return err
	}
	defer out.Close()
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("%s %s: %w; its log (%s) ends with:\n%s", filepath.Base(argv[0]), args[0], err, log, tail(log, 20))
	}
	return nil
}

// tail returns the last n lines of the file at path, for error messages.
func tail(path string, n int) string {
	f, err := os.Open(path)
	if err != nil {
		return err.Error()
	}
	defer f.Close()
	var lines []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		if lines = append(lines, sc.Text()); len(lines) > n {
			lines = lines[1:]
		}
	}
	return strings.Join(lines, "\n")
}
