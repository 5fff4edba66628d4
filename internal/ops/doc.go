// Package ops is what an operator of msggate sees: health and readiness endpoints, a Prometheus
// registry of the gateway's own metrics (fed through plain methods: graph's metrics extension,
// the cache's timing hook and the chunk store's timing monitor call them), and the HTTP
// middleware that gives every request an ID and writes a structured access log line. It is the
// only package that imports the Prometheus client, and it imports neither gqlgen nor a store
// driver.
package ops
