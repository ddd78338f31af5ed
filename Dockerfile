# One image for the api, the worker, the migrations job, the admin CLI, and (for the compose demo)
# the provider sandbox and the chain setup; docker-compose.yml picks the entry point. Everything
# runs as compiled JavaScript from dist/ (`npm run build`): no TypeScript toolchain at run time.
#
# test/build/dockerfile.test.ts replays these steps (the COPY lists and RUN commands) as a
# non-root user and starts the result, since CI has no Docker engine: keep to COPY, RUN, WORKDIR,
# ENV, USER, EXPOSE and CMD, one command per line.

# Build: every dependency, tsc to dist/, the prebuilt workflow bundle.
FROM node:22-bookworm-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund
COPY tsconfig.json tsconfig.build.json ./
COPY contracts ./contracts
COPY src ./src
COPY dev ./dev
COPY clients ./clients
RUN npm run build

# Runtime dependencies only (no solc, anvil, embedded PostgreSQL, tsx, test tooling), less what the
# runtime never loads: other platforms' native binaries, the workflow compiler, type declarations
# (dev/image/prune-runtime-modules.sh says what and why).
FROM node:22-bookworm-slim AS deps
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --ignore-scripts --no-audit --no-fund
COPY dev/image/prune-runtime-modules.sh ./
RUN sh prune-runtime-modules.sh

# Runtime: root-owned, read-only to the service user; nothing is written under /app.
FROM node:22-bookworm-slim AS runtime
ENV NODE_ENV=production
WORKDIR /app
COPY package.json ./
COPY --from=deps /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist
COPY migrations ./migrations
COPY contracts ./contracts
# The base image's `node` user, by number: an orchestrator can then check it is not root
# (Kubernetes' runAsNonRoot refuses a USER it cannot resolve to a uid).
USER 1000:1000
EXPOSE 3000 4000 9464 9465
CMD ["node", "dist/src/main/api.js"]
