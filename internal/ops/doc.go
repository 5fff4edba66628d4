// Package ops is what an operator of msggate sees: health and readiness endpoints, a Prometheus
// registry of the gateway's own metrics and the hooks that feed it (a gqlgen extension, a
// MongoDB command monitor, a go-redis hook), and the HTTP middleware that gives every request an
// ID and writes a structured access log line. It is the only package that imports the
// Prometheus client; the packages it observes report through plain functions.
package ops
