import type { FastifyInstance } from 'fastify';

/**
 * Which methods each route path declares, so a request for a known path with another method gets
 * 405 and an `Allow` header (RFC 9110 15.5.6) instead of looking like an unknown route. Must be
 * installed before the routes are registered: it learns them as they are added.
 */
export function trackDeclaredMethods(app: FastifyInstance): (path: string) => string[] {
  const routes: { pattern: RegExp; methods: Set<string> }[] = [];
  app.addHook('onRoute', (route) => {
    const pattern = routePattern(route.url ?? route.path);
    let entry = routes.find((r) => r.pattern.source === pattern.source);
    if (!entry) routes.push((entry = { pattern, methods: new Set() }));
    for (const method of [route.method].flat()) entry.methods.add(method.toUpperCase());
  });
  return (path) => {
    const methods = new Set<string>();
    for (const route of routes) {
      if (route.pattern.test(path)) for (const method of route.methods) methods.add(method);
    }
    return [...methods].sort();
  };
}

/** `/v1/payouts/:id` -> /^\/v1\/payouts\/[^/]+$/; a trailing `*` matches the rest of the path. */
function routePattern(url: string): RegExp {
  const source = url
    .split('/')
    .map((segment) =>
      segment.startsWith(':')
        ? '[^/]+'
        : segment === '*'
          ? '.*'
          : segment.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'),
    )
    .join('/');
  return new RegExp(`^${source}$`);
}
