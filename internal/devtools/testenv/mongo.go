package testenv

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

const ferretdbServerPkg = "github.com/msggate/msggate/internal/devtools/testenv/ferretdbserver"

// MongoDB is a test's private database on the FerretDB server shared by the
// test binary.
type MongoDB struct {
	uri string
	db  string
}

// URI returns the MongoDB connection string of the shared server.
func (m *MongoDB) URI() string { return m.uri }

// Database returns the name of the database reserved for this test.
func (m *MongoDB) Database() string { return m.db }

// ferret is the FerretDB child process shared by all tests in this binary.
var ferret struct {
	once   sync.Once
	uri    string
	server ferretDBFiles
	client *mongo.Client
	err    error
	seq    atomic.Uint64
}

// Mongo returns a fresh, uniquely named database on a FerretDB server that is
// started on first use and shared by the whole test binary. The database is
// dropped when the test ends.
func Mongo(t testing.TB) *MongoDB {
	t.Helper()
	ferret.once.Do(startFerretDB)
	if ferret.err != nil {
		t.Fatalf("testenv: FerretDB unavailable: %v", ferret.err)
	}

	m := &MongoDB{uri: ferret.uri, db: databaseName(t.Name(), ferret.seq.Add(1))}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := ferret.client.Database(m.db).Drop(ctx); err != nil {
			t.Logf("testenv: drop database %s: %v", m.db, err)
		}
	})
	return m
}

// databaseName derives a FerretDB-valid name ([a-zA-Z0-9_-]{1,63}) from the
// test name; the sequence number keeps it unique when names collide or get
// truncated.
func databaseName(testName string, seq uint64) string {
	prefix := fmt.Sprintf("t%d_", seq)
	var b strings.Builder
	b.WriteString(prefix)
	for _, r := range strings.ToLower(testName) {
		if b.Len() >= 63 {
			break
		}
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9':
			b.WriteRune(r)
		default:
			b.WriteByte('_')
		}
	}
	return b.String()
}

func startFerretDB() {
	uri, server, err := launchFerretDB()
	if err != nil {
		ferret.err = err
		return
	}
	client, err := mongo.Connect(options.Client().ApplyURI(uri))
	if err != nil {
		ferret.err = fmt.Errorf("connect to %s: %w", uri, err)
		return
	}
	ferret.uri, ferret.server, ferret.client = uri, server, client
}

func launchFerretDB() (string, ferretDBFiles, error) {
	// Everything lives in one scratch dir that the child deletes when it exits;
	// a test binary has no hook to clean up after itself.
	root, err := os.MkdirTemp("", "msggate-ferretdb-")
	if err != nil {
		return "", ferretDBFiles{}, err
	}
	files := ferretDBFiles{bin: filepath.Join(root, "ferretdbserver"), dataDir: filepath.Join(root, "data")}
	if err := buildFerretDBServer(files.bin); err != nil {
		_ = os.RemoveAll(root)
		return "", ferretDBFiles{}, err
	}

	proc, err := startFerretDBProcess(files.bin, "-dir", files.dataDir, "-remove-on-exit", root)
	if err != nil {
		_ = os.RemoveAll(root)
		return "", ferretDBFiles{}, err
	}
	// Never closed or released: the child's lifetime is the test binary's,
	// and the open pipe is what keeps it running.
	keepAlive = proc.stdin
	return proc.uri, files, nil
}

// ferretDBProcess is a running ferretdbserver: it exits when its stdin closes.
type ferretDBProcess struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	uri    string
	exited chan struct{}
	logs   *syncBuffer
}

// startFerretDBProcess runs bin with args and waits for the URI it prints once it accepts
// connections.
func startFerretDBProcess(bin string, args ...string) (*ferretDBProcess, error) {
	p := &ferretDBProcess{logs: &syncBuffer{}, exited: make(chan struct{})}
	p.cmd = exec.Command(bin, args...)
	p.cmd.Stderr = p.logs
	// SIGTERM rather than SIGKILL so the child can still delete its scratch
	// dir; it force-exits shortly after anyway.
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM}
	stdin, err := p.cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := p.cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := p.cmd.Start(); err != nil {
		return nil, err
	}
	p.stdin = stdin

	lines := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if uri, ok := strings.CutPrefix(sc.Text(), "MONGODB_URI="); ok {
				lines <- uri
				break
			}
		}
		// Keep draining so a chatty child never blocks on a full pipe.
		_, _ = io.Copy(io.Discard, stdout)
		close(lines)
		_ = p.cmd.Wait()
		close(p.exited)
	}()

	select {
	case uri, ok := <-lines:
		if ok {
			p.uri = uri
			return p, nil
		}
		<-p.exited
		return nil, fmt.Errorf("ferretdbserver exited before becoming ready: %s", p.logs.String())
	case <-time.After(60 * time.Second):
		_ = p.cmd.Process.Kill()
		return nil, fmt.Errorf("ferretdbserver not ready after 60s: %s", p.logs.String())
	}
}

var keepAlive io.WriteCloser

// buildFerretDBServer builds the ferretdbserver command into bin, without -race.
func buildFerretDBServer(bin string) error {
	goBin, err := findGo()
	if err != nil {
		return err
	}
	build := exec.Command(goBin, "build", "-o", bin, ferretdbServerPkg)
	build.Dir = moduleDir()
	build.Env = append(os.Environ(), "GOFLAGS="+withoutRace(os.Getenv("GOFLAGS")))
	if out, err := build.CombinedOutput(); err != nil {
		return fmt.Errorf("go build %s: %w\n%s", ferretdbServerPkg, err, out)
	}
	return nil
}

// withoutRace drops -race from GOFLAGS: a race-instrumented FerretDB would
// defeat the point of running it out of process.
func withoutRace(goflags string) string {
	var kept []string
	for _, f := range strings.Fields(goflags) {
		if f != "-race" && !strings.HasPrefix(f, "-race=") {
			kept = append(kept, f)
		}
	}
	return strings.Join(kept, " ")
}

func findGo() (string, error) {
	// `go test` puts its own GOROOT/bin first on PATH, so this finds the same
	// toolchain that built the test binary.
	if p, err := exec.LookPath("go"); err == nil {
		return p, nil
	}
	p := filepath.Join(runtime.GOROOT(), "bin", "go")
	if _, err := os.Stat(p); err == nil {
		return p, nil
	}
	return "", errors.New("go command not found in PATH or GOROOT/bin; it is needed to build ferretdbserver")
}
