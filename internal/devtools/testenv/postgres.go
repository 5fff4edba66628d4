package testenv

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// PostgresServer is a PostgreSQL server (the postgres binary of Debian's package) of its own,
// on a loopback port and a scratch data directory, that can be killed and started again over
// the same data. The harness speaks to it only through psql: the search engine under test
// (internal/search/pgindex) stays the only importer of a PostgreSQL driver.
//
// PostgreSQL refuses to run as root, so when the test binary is root the server runs as an
// unprivileged user (postgres, else nobody) that owns the scratch directory; otherwise it runs
// as the caller. The server dies with the process that started it, and a janitor process
// deletes the scratch directory then, since a test binary has no hook to clean up after itself.
type PostgresServer struct {
	bins    postgresBinaries
	root    string // scratch directory: data/ and nothing else
	cred    *syscall.Credential
	port    int
	janitor io.WriteCloser // closing it (or our death) tells the janitor to delete root
	// settings are the caller's server settings, name=value.
	settings []string

	mu     sync.Mutex
	cmd    *exec.Cmd
	exited chan struct{}
	logs   *syncBuffer
}

// PostgresUser is the superuser every PostgresServer is created with; it connects without a
// password (trust authentication, loopback only).
const PostgresUser = "postgres"

// StartPostgresServer creates a cluster in a new scratch directory (initdb) and starts a server
// on it on a free loopback port, for tests that kill it and for the bench commands. The caller
// ends it with Close. It survives its own kill, not the machine's crash: fsync is off.
// settings are more server settings ("shared_buffers=1GB"), after the harness's own.
func StartPostgresServer(settings ...string) (*PostgresServer, error) {
	bins, err := findPostgres()
	if err != nil {
		return nil, err
	}
	cred, err := postgresCredential()
	if err != nil {
		return nil, err
	}
	root, err := os.MkdirTemp("", "msggate-postgres-")
	if err != nil {
		return nil, err
	}
	s := &PostgresServer{bins: bins, root: root, cred: cred, settings: settings}
	if err := s.init(); err != nil {
		_ = os.RemoveAll(root)
		return nil, err
	}
	var lastErr error
	for range 5 {
		if s.port, err = FreePort(); err != nil {
			break
		}
		if lastErr = s.start(); lastErr == nil {
			return s, nil
		}
	}
	s.Close()
	if err != nil {
		return nil, fmt.Errorf("testenv: find free port: %w", err)
	}
	return nil, fmt.Errorf("testenv: start postgres: %w", lastErr)
}

// DedicatedPostgres starts a PostgreSQL server owned by one test (one it may kill and restart)
// and closes it when the test ends.
func DedicatedPostgres(t testing.TB) *PostgresServer {
	t.Helper()
	s, err := StartPostgresServer()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s
}

// init makes the scratch directory the server user's and runs initdb in it, with a UTF-8
// locale: pg_trgm and the text search parser classify letters by the database's LC_CTYPE,
// and under the C locale every CJK character would count as a separator.
func (s *PostgresServer) init() error {
	if s.cred != nil {
		if err := os.Chown(s.root, int(s.cred.Uid), int(s.cred.Gid)); err != nil {
			return err
		}
	}
	if err := s.startJanitor(); err != nil {
		return err
	}
	cmd := exec.Command(s.bins.initdb, "-D", s.dataDir(), "-U", PostgresUser, "--auth=trust",
		"-E", "UTF8", "--locale=C.UTF-8", "--no-sync", "--no-instructions")
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: s.cred, Pdeathsig: syscall.SIGKILL}
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("testenv: initdb: %w\n%s", err, out)
	}
	return nil
}

// startJanitor starts the process that deletes the scratch directory once its stdin closes:
// when Close closes it, or when the test binary dies, however it dies. It first gives the
// postmaster (told to quit by its parent-death signal) a few seconds to let go of its files.
func (s *PostgresServer) startJanitor() error {
	const script = `cat >/dev/null
i=0
while [ -e "$1/data/postmaster.pid" ] && [ $i -lt 50 ]; do sleep 0.1; i=$((i+1)); done
rm -rf "$1"`
	cmd := exec.Command("/bin/sh", "-c", script, "janitor", s.root)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return err
	}
	go func() { _ = cmd.Wait() }()
	s.janitor = stdin
	return nil
}

func (s *PostgresServer) dataDir() string { return filepath.Join(s.root, "data") }

// Port is the server's TCP port on 127.0.0.1; it stays the same across restarts.
func (s *PostgresServer) Port() int { return s.port }

// URL returns the connection URL of database on this server, as PostgresUser.
func (s *PostgresServer) URL(database string) string {
	u := url.URL{
		Scheme:   "postgres",
		User:     url.User(PostgresUser),
		Host:     net.JoinHostPort("127.0.0.1", strconv.Itoa(s.port)),
		Path:     "/" + database,
		RawQuery: "sslmode=disable",
	}
	return u.String()
}

// CreateDatabase creates an empty database on the server.
func (s *PostgresServer) CreateDatabase(name string) error {
	_, err := s.psql("postgres", "CREATE DATABASE "+quoteIdent(name))
	return err
}

// DropDatabase drops a database, closing the connections still open to it.
func (s *PostgresServer) DropDatabase(name string) error {
	_, err := s.psql("postgres", "DROP DATABASE IF EXISTS "+quoteIdent(name)+" WITH (FORCE)")
	return err
}

// Query runs one SQL statement in database through psql and returns its output, unaligned
// and without headers: for tests that look at what an engine stored.
func (s *PostgresServer) Query(database, sql string) (string, error) {
	return s.psql(database, sql)
}

func (s *PostgresServer) psql(database, sql string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, s.bins.psql, "-X", "-q", "-t", "-A", "-v", "ON_ERROR_STOP=1",
		"-h", "127.0.0.1", "-p", strconv.Itoa(s.port), "-U", PostgresUser, "-d", database, "-c", sql)
	cmd.Env = append(os.Environ(), "PGCONNECT_TIMEOUT=5")
	var stderr syncBuffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("psql %q: %w: %s", sql, err, strings.TrimSpace(stderr.String()))
	}
	return strings.TrimSpace(string(out)), nil
}

func quoteIdent(s string) string { return `"` + strings.ReplaceAll(s, `"`, `""`) + `"` }

// Kill ends the server at once (SIGKILL to the postmaster), as a crash would, and waits for
// the postmaster to be gone. Its backends notice and exit on their own; Restart waits for them.
func (s *PostgresServer) Kill() { s.end(syscall.SIGKILL) }

// Stop shuts the server down (fast shutdown: SIGINT) and waits for it to be gone.
func (s *PostgresServer) Stop() { s.end(syscall.SIGINT) }

func (s *PostgresServer) end(sig syscall.Signal) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd == nil {
		return
	}
	_ = s.cmd.Process.Signal(sig)
	select {
	case <-s.exited:
	case <-time.After(30 * time.Second):
		_ = s.cmd.Process.Kill()
		<-s.exited
	}
	s.cmd = nil
}

// Restart starts a stopped or killed server again on its port, over the same data (after a
// kill, PostgreSQL recovers from its WAL first). It does nothing while the server runs.
func (s *PostgresServer) Restart() error {
	var err error
	// After a kill the old backends may hold the shared memory for a moment, and the kernel
	// may not have released the port yet: retry.
	deadline := time.Now().Add(30 * time.Second)
	for {
		if err = s.start(); err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("testenv: restart postgres on port %d: %w", s.port, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// Close stops the server and deletes its files.
func (s *PostgresServer) Close() {
	s.Stop()
	if s.janitor != nil {
		_ = s.janitor.Close()
		s.janitor = nil
	}
	// The janitor runs as us, and root or the owner can remove everything; removing here too
	// makes Close synchronous.
	_ = os.RemoveAll(s.root)
}

// Logs returns what the server has logged lately, for a failing test's message.
func (s *PostgresServer) Logs() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.logs == nil {
		return ""
	}
	return s.logs.String()
}

func (s *PostgresServer) start() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd != nil {
		return nil
	}
	logs := &syncBuffer{}
	cmd := exec.Command(s.bins.postgres, "-D", s.dataDir(),
		"-p", strconv.Itoa(s.port),
		"-c", "listen_addresses=127.0.0.1",
		// No Unix socket: the default directory (/var/run/postgresql) may not exist or be
		// writable, and the tests connect over TCP anyway.
		"-c", "unix_socket_directories=",
		// A commit still reaches the kernel before it is acknowledged (synchronous_commit
		// stays on), so a killed server loses nothing; only the flushes to disk are skipped,
		// which matter for a machine's crash, not a process's.
		"-c", "fsync=off",
		"-c", "full_page_writes=off",
		"-c", "max_connections=300",
		"-c", "shared_buffers=64MB",
	)
	for _, setting := range s.settings {
		cmd.Args = append(cmd.Args, "-c", setting)
	}
	cmd.Stdout = logs
	cmd.Stderr = logs
	// SIGQUIT is PostgreSQL's immediate shutdown: the postmaster takes its backends with it and
	// removes its pid file, which is what the janitor waits for.
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: s.cred, Pdeathsig: syscall.SIGQUIT}
	if err := cmd.Start(); err != nil {
		return err
	}
	exited := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(exited)
	}()

	deadline := time.Now().Add(60 * time.Second)
	for {
		// Asking for the data directory proves the server on the port is this one, not one
		// that won a race for the port.
		dir, err := s.psql("postgres", "SHOW data_directory")
		if err == nil {
			if dir == s.dataDir() {
				s.cmd, s.exited, s.logs = cmd, exited, logs
				return nil
			}
			_ = cmd.Process.Kill()
			<-exited
			return fmt.Errorf("port %d is served by another postgres (%s)", s.port, dir)
		}
		select {
		case <-exited:
			return fmt.Errorf("postgres exited during startup: %s", strings.TrimSpace(logs.String()))
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			_ = cmd.Process.Kill()
			<-exited
			return fmt.Errorf("postgres did not accept connections within 60s: %s", strings.TrimSpace(logs.String()))
		}
	}
}

// postgresCredential is who the server runs as: nil (the caller) unless the caller is root,
// which PostgreSQL refuses to run as.
func postgresCredential() (*syscall.Credential, error) {
	if os.Geteuid() != 0 {
		return nil, nil
	}
	var errs []error
	for _, name := range []string{"postgres", "nobody"} {
		u, err := user.Lookup(name)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		uid, err1 := strconv.ParseUint(u.Uid, 10, 32)
		gid, err2 := strconv.ParseUint(u.Gid, 10, 32)
		if err1 != nil || err2 != nil {
			errs = append(errs, fmt.Errorf("user %s: uid %q gid %q", name, u.Uid, u.Gid))
			continue
		}
		return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid), NoSetGroups: false}, nil
	}
	return nil, fmt.Errorf("testenv: running as root, and no unprivileged user to run postgres as: %w", errors.Join(errs...))
}

// postgresBinaries are the programs of one PostgreSQL installation.
type postgresBinaries struct {
	initdb, postgres, psql string
}

// findPostgres finds one installation holding initdb, postgres and psql together: the one
// initdb on PATH belongs to (here /usr/local/bin links into Debian's tree), else Debian's
// newest under /usr/lib/postgresql/<version>/bin.
func findPostgres() (postgresBinaries, error) {
	var dirs []string
	if p, err := exec.LookPath("initdb"); err == nil {
		if real, err := filepath.EvalSymlinks(p); err == nil {
			dirs = append(dirs, filepath.Dir(real))
		}
		dirs = append(dirs, filepath.Dir(p))
	}
	versions, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	sort.Slice(versions, func(i, j int) bool {
		return postgresMajor(versions[i]) > postgresMajor(versions[j])
	})
	dirs = append(dirs, versions...)
	for _, dir := range dirs {
		b := postgresBinaries{
			initdb:   filepath.Join(dir, "initdb"),
			postgres: filepath.Join(dir, "postgres"),
			psql:     filepath.Join(dir, "psql"),
		}
		if isFile(b.initdb) && isFile(b.postgres) && isFile(b.psql) {
			return b, nil
		}
	}
	return postgresBinaries{}, errors.New("testenv: PostgreSQL (initdb, postgres, psql) not found on PATH or under " +
		"/usr/lib/postgresql/*/bin; tests need a real server: install it with `apt-get install -y postgresql` " +
		"(./scripts/need-postgres does)")
}

func postgresMajor(binDir string) int {
	v, _ := strconv.Atoi(filepath.Base(filepath.Dir(binDir)))
	return v
}

// PostgresDB is a test's private database on the PostgreSQL server shared by the test binary.
type PostgresDB struct {
	server *PostgresServer
	name   string
}

// URL is the database's connection URL.
func (d *PostgresDB) URL() string { return d.server.URL(d.name) }

// Database is the database's name.
func (d *PostgresDB) Database() string { return d.name }

// Query runs one SQL statement in the database through psql (see PostgresServer.Query).
func (d *PostgresDB) Query(sql string) (string, error) { return d.server.Query(d.name, sql) }

// sharedPostgres is the server shared by all tests of this binary that need no server of
// their own; it lives as long as the binary.
var sharedPostgres struct {
	once   sync.Once
	server *PostgresServer
	err    error
	seq    atomic.Uint64
}

// Postgres returns a fresh, uniquely named database on a PostgreSQL server that is started on
// first use and shared by the whole test binary. The database is dropped when the test ends.
func Postgres(t testing.TB) *PostgresDB {
	t.Helper()
	sharedPostgres.once.Do(func() {
		sharedPostgres.server, sharedPostgres.err = StartPostgresServer()
	})
	if sharedPostgres.err != nil {
		t.Fatalf("testenv: PostgreSQL unavailable: %v", sharedPostgres.err)
	}
	db := &PostgresDB{server: sharedPostgres.server, name: databaseName(t.Name(), sharedPostgres.seq.Add(1))}
	if err := db.server.CreateDatabase(db.name); err != nil {
		t.Fatalf("testenv: %v\n%s", err, db.server.Logs())
	}
	t.Cleanup(func() {
		if err := db.server.DropDatabase(db.name); err != nil {
			t.Logf("testenv: drop database %s: %v", db.name, err)
		}
	})
	return db
}
