package testenv

import (
	"errors"
	"fmt"
	"os/exec"
	"testing"
)

// ferretDBFiles locates a FerretDB server testenv started: the ferretdbserver binary it runs
// and the data dir it was given.
type ferretDBFiles struct {
	bin, dataDir string
}

// indexIDs gives the collections of a database of the server the SQLite index on _id that
// FerretDB does not make (embedded.IndexIDs), as the embedded store of gateway.Open has it.
// The binary does it in a process of its own (ferretdbserver -index-ids), so test binaries
// never link SQLite; it is safe while the server runs. Collections created afterwards need
// another call.
func (f ferretDBFiles) indexIDs(database string) error {
	if database == "" {
		return errors.New("testenv: index _id: no database named")
	}
	out, err := exec.Command(f.bin, "-dir", f.dataDir, "-index-ids", database).CombinedOutput()
	if err != nil {
		return fmt.Errorf("testenv: index _id in %s: %w\n%s", database, err, out)
	}
	return nil
}

// IndexIDs gives the collections the test's database holds now the SQLite index FerretDB's
// lookups by _id need (without it each one scans its collection), as msggate's embedded
// store has it.
func (m *MongoDB) IndexIDs(t testing.TB) {
	t.Helper()
	if err := ferret.server.indexIDs(m.db); err != nil {
		t.Fatal(err)
	}
}

// IndexIDs is MongoDB.IndexIDs for the database of a configuration: uri must be the shared
// server's (Mongo) or one StartFerretDBServer started, or empty for msggate's embedded store,
// which gateway.Open indexes itself.
func IndexIDs(t testing.TB, uri, database string) {
	t.Helper()
	switch uri {
	case "":
	case ferret.uri:
		if err := ferret.server.indexIDs(database); err != nil {
			t.Fatal(err)
		}
	default:
		s, ok := startedServers.Load(uri)
		if !ok {
			t.Fatalf("testenv: %s is no FerretDB server testenv started", uri)
		}
		if err := s.(*FerretDBServer).IndexIDs(database); err != nil {
			t.Fatal(err)
		}
	}
}

// IndexIDs is MongoDB.IndexIDs for a database of this server.
func (s *FerretDBServer) IndexIDs(database string) error { return s.indexIDs(database) }
