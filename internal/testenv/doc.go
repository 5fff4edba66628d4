// Package testenv starts real backing servers for tests: a dedicated
// redis-server per test and one FerretDB child process per test binary, with a
// fresh database per test. It is meant to be imported only from tests and test harnesses
// (internal/gateway/gatewaytest) and from the commands that measure msggate against real servers.
package testenv
