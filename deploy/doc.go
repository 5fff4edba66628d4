// Package deploy holds no code: it is where msggate's deployment files live and are tested.
// compose/ has the Compose files (msggate.yml: msggate with MongoDB and Redis; openim.yml:
// msggate next to an openimsdk/openim-docker deployment), grafana/ the dashboard. Its tests
// check the Compose files with docker-compose and against the gateway's own configuration,
// and that every metric the dashboard queries is exported by running gateways. The container
// image is the repository's Dockerfile, tested by scripts/docker-test.
package deploy
