# Stand-in for nats:<tag>-alpine when Docker Hub is unreachable: Debian 12's nats-server (2.9) and
# the wget of the health check; arguments starting with - go to nats-server, as in the official image.
FROM loyalty-standin/debian:bookworm
RUN set -eu; \
    apt-get update; \
    DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends nats-server wget; \
    rm -rf /var/lib/apt/lists/*; \
    mkdir -p /etc/nats; \
    printf 'port: 4222\nhttp_port: 8222\n' >/etc/nats/nats-server.conf
COPY nats-entrypoint.sh /usr/local/bin/docker-entrypoint.sh
LABEL org.loyalty.standin="Debian 12 nats-server"
EXPOSE 4222 8222
ENTRYPOINT ["docker-entrypoint.sh"]
CMD ["nats-server", "--config", "/etc/nats/nats-server.conf"]
