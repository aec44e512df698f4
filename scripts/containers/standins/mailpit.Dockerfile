# Stand-in for axllent/mailpit when Docker Hub is unreachable: a dependency-free mail catcher in
# Node (SMTP on 1025, HTTP on 8025 with /readyz and /api/v1/messages) and a /mailpit command whose
# `readyz` is the official image's health check.
ARG NODE_IMAGE
FROM ${NODE_IMAGE}
COPY mail-catcher.mjs /mail-catcher.mjs
RUN printf '#!/bin/sh\nexec node /mail-catcher.mjs "$@"\n' >/mailpit && chmod 755 /mailpit
LABEL org.loyalty.standin="node mail catcher (scripts/containers/standins/mail-catcher.mjs)"
USER 1000:1000
EXPOSE 1025 8025
CMD ["/mailpit"]
