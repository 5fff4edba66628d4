package testenv_test

import (
	"strings"
	"testing"

	"github.com/msggate/msggate/internal/devtools/testenv"
)

// The shared server gives each test a database of its own, with the extension and the locale
// message search relies on: pg_trgm must see CJK characters as letters, not separators.
func TestPostgres(t *testing.T) {
	t.Parallel()
	db := testenv.Postgres(t)
	other := testenv.Postgres(t)
	if db.Database() == other.Database() {
		t.Fatalf("two Postgres calls share database %q", db.Database())
	}
	if _, err := db.Query("CREATE EXTENSION IF NOT EXISTS pg_trgm"); err != nil {
		t.Fatal(err)
	}
	got, err := db.Query("SELECT similarity('今天天气很好', '天气很好') > 0")
	if err != nil {
		t.Fatal(err)
	}
	if got != "t" {
		t.Fatalf("pg_trgm finds no trigram shared by two CJK strings (similarity > 0 is %q): the cluster's locale treats CJK as separators", got)
	}
	if _, err := db.Query("CREATE TABLE only_here (n int)"); err != nil {
		t.Fatal(err)
	}
	if _, err := other.Query("SELECT * FROM only_here"); err == nil {
		t.Fatal("a table created in one test's database is visible in another's")
	}
}

// A dedicated server can be killed, refuses connections then, and comes back with its data.
func TestDedicatedPostgres(t *testing.T) {
	t.Parallel()
	srv := testenv.DedicatedPostgres(t)
	if err := srv.CreateDatabase("kept"); err != nil {
		t.Fatal(err)
	}
	if _, err := srv.Query("kept", "CREATE TABLE t (n int); INSERT INTO t VALUES (42)"); err != nil {
		t.Fatal(err)
	}
	srv.Kill()
	if _, err := srv.Query("kept", "SELECT 1"); err == nil {
		t.Fatal("a killed server still answers")
	}
	if err := srv.Restart(); err != nil {
		t.Fatal(err)
	}
	got, err := srv.Query("kept", "SELECT n FROM t")
	if err != nil {
		t.Fatal(err)
	}
	if strings.TrimSpace(got) != "42" {
		t.Fatalf("after a kill and restart the table holds %q, want 42", got)
	}
}
