// Package gatewaytest is the one harness of the suites that run whole gateways (those of
// internal/gateway and internal/cli, and e2e): it starts gateways (one, a pair on shared
// servers, one on a Redis Cluster) on the real servers internal/devtools/testenv runs, and holds the
// one GraphQL caller over HTTP, the one graphql-transport-ws client and the one polling helper
// they use. It is meant to be imported only from tests.
//
// It is a package of its own rather than part of testenv because it needs the whole gateway:
// testenv runs servers for every adapter's tests, which must not build the layers above.
package gatewaytest
