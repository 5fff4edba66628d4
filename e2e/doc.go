// Package e2e holds the suites that need Node or Chromium: the GraphQL-over-HTTP audit
// (graphql-http), GraphiQL driven in headless Chromium (playwright-core), and the npm
// graphql-ws client subscribing through one gateway instance to a message sent through
// another. The Node tooling they run lives beside them, pinned by package-lock.json;
// ./scripts/test installs it (npm ci) and Debian's chromium. The gateways come from
// internal/gateway/gatewaytest, as in every other suite, except the one GraphiQL test that
// needs the embedded default's demo token: it runs msggate serve (cli.Serve) itself.
package e2e
