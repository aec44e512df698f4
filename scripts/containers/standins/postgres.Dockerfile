# Stand-in for postgres:<tag> when Docker Hub is unreachable: Debian 12's PostgreSQL (15), with an
# entrypoint that honours what the official image's does for compose (POSTGRES_USER,
# POSTGRES_PASSWORD, POSTGRES_DB, PGDATA, the postgres user, pg_isready on the default socket).
FROM loyalty-standin/debian:bookworm
RUN set -eu; \
    apt-get update; \
    DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends postgresql-15; \
    rm -rf /var/lib/apt/lists/* /var/lib/postgresql/15 /etc/postgresql/15; \
    mkdir -p /var/lib/postgresql/data /var/run/postgresql; \
    chown -R postgres:postgres /var/lib/postgresql /var/run/postgresql
ENV PATH=/usr/lib/postgresql/15/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    PGDATA=/var/lib/postgresql/data
COPY postgres-entrypoint.sh /usr/local/bin/docker-entrypoint.sh
LABEL org.loyalty.standin="Debian 12 postgresql-15 (the official image would be this tag's major)"
VOLUME /var/lib/postgresql/data
STOPSIGNAL SIGINT
EXPOSE 5432
ENTRYPOINT ["docker-entrypoint.sh"]
CMD ["postgres"]
