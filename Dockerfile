# One image for the api, the worker, the provider sandbox and the chain setup; docker-compose.yml
# picks the entry point. Code runs through tsx (esbuild), as in development: there is no separate
# build output to drift from the tested sources.
FROM node:22-bookworm-slim
WORKDIR /app
ENV NODE_ENV=production
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund && npm cache clean --force
COPY tsconfig.json ./
COPY contracts ./contracts
COPY migrations ./migrations
COPY src ./src
COPY dev ./dev
USER node
EXPOSE 3000 4000 9464
CMD ["npx", "tsx", "src/api/server.ts"]
