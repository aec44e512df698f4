# Stand-in for redis:<tag> when Docker Hub is unreachable: Debian 12's redis-server (7.0), run as
# the redis user in /data with protected mode off, as the official image runs it.
FROM loyalty-standin/debian:bookworm
RUN set -eu; \
    apt-get update; \
    DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends redis-server; \
    rm -rf /var/lib/apt/lists/*; \
    mkdir -p /data; chown redis:redis /data
LABEL org.loyalty.standin="Debian 12 redis-server"
WORKDIR /data
USER redis
EXPOSE 6379
CMD ["redis-server", "--protected-mode", "no"]
