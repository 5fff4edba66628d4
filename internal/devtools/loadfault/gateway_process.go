package loadfault

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/msggate/msggate/internal/devtools/testenv"
	"github.com/msggate/msggate/internal/ops"
)

// gatewayProcess is one gateway instance run as a child process on a fixed port, so that it
// can be killed and started again where its clients expect it.
type gatewayProcess struct {
	name string
	addr string
	argv []string
	env  []string
	log  string

	mu     sync.Mutex
	cmd    *exec.Cmd
	exited chan struct{}
}

// healthyWithin bounds how long a gateway may take to answer /healthz after it starts.
const healthyWithin = 60 * time.Second

func newGatewayProcess(name, dir string, command []string, env []string, mongoURI, redisURL string) (*gatewayProcess, error) {
	port, err := testenv.FreePort()
	if err != nil {
		return nil, err
	}
	p := &gatewayProcess{name: name, addr: "127.0.0.1:" + strconv.Itoa(port), env: env,
		log: filepath.Join(dir, name+".log")}
	p.argv = append(append([]string{}, command...),
		"-addr", p.addr, "-data-dir", filepath.Join(dir, name),
		"-mongo-uri", mongoURI, "-redis-url", redisURL,
		"-rate-limit", "-1", "-anonymous-rate-limit", "-1", "-playground=false")
	return p, nil
}

// URL is the gateway's base URL; it stays the same across restarts.
func (p *gatewayProcess) URL() string { return "http://" + p.addr }

// start starts the process and waits until it answers /healthz.
func (p *gatewayProcess) start(ctx context.Context) error {
	logFile, err := os.OpenFile(p.log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	cmd := exec.Command(p.argv[0], p.argv[1:]...)
	cmd.Env = append(os.Environ(), p.env...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	// A harness that dies takes its gateways with it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		logFile.Close()
		return fmt.Errorf("start %s: %w", p.name, err)
	}
	exited := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		logFile.Close()
		close(exited)
	}()
	p.mu.Lock()
	p.cmd, p.exited = cmd, exited
	p.mu.Unlock()

	deadline := time.Now().Add(healthyWithin)
	client := &http.Client{Timeout: time.Second}
	for {
		select {
		case <-exited:
			return fmt.Errorf("%s exited while starting; its log (%s) ends with:\n%s", p.name, p.log, tail(p.log, 20))
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
		if resp, err := client.Get(p.URL() + "/healthz"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		if time.Now().After(deadline) {
			p.kill()
			return fmt.Errorf("%s did not answer /healthz within %s; its log (%s) ends with:\n%s", p.name, healthyWithin, p.log, tail(p.log, 20))
		}
	}
}

// kill ends the process at once (SIGKILL), as a crash would, and waits for it to be gone.
func (p *gatewayProcess) kill() { p.end(syscall.SIGKILL, 0) }

// stop asks the process to shut down (SIGTERM) and kills it if it has not after grace.
func (p *gatewayProcess) stop(grace time.Duration) { p.end(syscall.SIGTERM, grace) }

func (p *gatewayProcess) end(sig syscall.Signal, grace time.Duration) {
	p.mu.Lock()
	cmd, exited := p.cmd, p.exited
	p.cmd = nil
	p.mu.Unlock()
	if cmd == nil {
		return
	}
	_ = cmd.Process.Signal(sig)
	if grace > 0 {
		select {
		case <-exited:
			return
		case <-time.After(grace):
			_ = cmd.Process.Kill()
		}
	}
	<-exited
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
		lines = append(lines, sc.Text())
		if len(lines) > n {
			lines = lines[1:]
		}
	}
	return strings.Join(lines, "\n")
}

// processStats is what one gateway's /metrics says about its process.
type processStats struct {
	Goroutines float64
	HeapBytes  float64 // go_memstats_heap_inuse_bytes
	RSSBytes   float64 // process_resident_memory_bytes
}

var errNoStats = errors.New("metrics without the process figures")

// scrapeStats reads the gateway's process figures from its /metrics.
func (p *gatewayProcess) scrapeStats(ctx context.Context, client *http.Client) (processStats, error) {
	m, err := ops.ScrapeGauges(ctx, client, p.URL(), "go_goroutines", "go_memstats_heap_inuse_bytes", "process_resident_memory_bytes")
	if err != nil {
		return processStats{}, errors.Join(errNoStats, err)
	}
	return processStats{Goroutines: m["go_goroutines"], HeapBytes: m["go_memstats_heap_inuse_bytes"],
		RSSBytes: m["process_resident_memory_bytes"]}, nil
}

// waitReady waits until the gateway answers /readyz: its store is prepared (collections and
// indexes made), which a gateway that answers /healthz may not be yet.
func (p *gatewayProcess) waitReady(ctx context.Context, within time.Duration) error {
	deadline := time.Now().Add(within)
	client := &http.Client{Timeout: time.Second}
	for {
		if resp, err := client.Get(p.URL() + "/readyz"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s did not answer /readyz within %s", p.name, within)
		}
		if !sleepCtx(ctx, 100*time.Millisecond) {
			return ctx.Err()
		}
	}
}
