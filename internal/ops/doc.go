// Package ops is what an operator of msggate sees: health and readiness endpoints, a Prometheus
// registry of the gateway's own metrics (fed by a gqlgen extension and by plain observer
// functions that the cache's timing hook and the chunk store's timing monitor call), and the
// HTTP middleware that gives every request an ID and writes a structured access log line. It
// is the only package that imports the Prometheus client, and it imports no store driver.
package ops
