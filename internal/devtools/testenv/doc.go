// Package testenv starts real backing servers for tests: a dedicated redis-server per test and
// one FerretDB child process per test binary, with a fresh database per test; and, for the
// developer tools that run msggate as child processes, a build of its binary. It builds
// FerretDB with the go command at run time, so it works only in a source checkout: it is
// imported only by tests, test harnesses (internal/gateway/gatewaytest) and the tools under
// cmd/ (through internal/devtools/bench, internal/devtools/loadfault and internal/devtools/fanout), never by the product.
package testenv
