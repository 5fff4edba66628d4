// Package gateway wires msggate together: its Config (flags and environment, the only reader
// of MSGGATE_* variables), Open and Close of the stores and the parts over them, the HTTP
// routes (GraphQL, GraphiQL, health, readiness, metrics), Serve with a graceful shutdown, the
// retention job's start-up, and the JWT secret kept in the data directory. In OpenIM mode
// (Config.OpenIM, openim.go) it wires an OpenIM deployment's stores, read-only, in place of
// msggate's own.
//
// Its package gatewaytest starts gateways for tests.
package gateway
