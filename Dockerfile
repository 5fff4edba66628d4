# msggate's container image: the static binary (CGO_ENABLED=0, FerretDB's SQLite is pure Go)
# on an empty base, with only CA certificates, a passwd entry for the user it runs as and two
# directories. FROM scratch needs no base image to be pulled, so the image builds anywhere a
# Docker daemon runs, offline included. The build context is not this repository: it is the
# directory scripts/docker-image makes (the binary, built first, and rootfs/):
#
#   ./scripts/docker-image                 # builds msggate:latest
#   docker run -p 8080:8080 -v msggate-data:/data msggate
#
# docs/operations.md ("The container image") says how to run it, get a token and read its health.
FROM scratch

# /etc/passwd and /etc/group name the user msggate (65532), /etc/ssl/certs the CA bundle for
# TLS to MongoDB, Redis, Kafka and an identity provider, /tmp a scratch directory for SQLite.
COPY rootfs/ /
# The embedded store and the generated JWT secret, owned by the user the process runs as; a
# named volume mounted here starts as a copy of it, with that owner.
COPY --chown=65532:65532 data/ /data/
COPY msggate /msggate

USER 65532:65532
# Inside a container requests arrive over the container's network, never on its loopback:
# listen on every interface (the embedded default alone would listen on 127.0.0.1).
ENV MSGGATE_ADDR=:8080 MSGGATE_DATA_DIR=/data
VOLUME /data
EXPOSE 8080
# The image has no shell or curl: the binary asks its own /healthz (the process answers).
# Load balancers should poll /readyz, which also waits for MongoDB and Redis.
HEALTHCHECK --interval=10s --timeout=5s --start-period=60s --retries=3 CMD ["/msggate", "healthcheck"]
ENTRYPOINT ["/msggate"]
