import { Writable } from 'node:stream';
import { loadApiConfig } from '../../src/config';
import { createLogger } from '../../src/observability/logger';
import { startApi } from '../support/api';

// Probes come every few seconds from the launcher and from orchestrators: at info level they are
// noise (two lines each); at debug they are still there for whoever looks for them.

async function logsOf(level: string, paths: string[]): Promise<{ msg: string; url?: string }[]> {
  const lines: { msg: string; level: number; req?: { url: string }; reqId: string }[] = [];
  const destination = new Writable({
    write(chunk: Buffer, _enc, done) {
      for (const line of chunk.toString().split('\n').filter(Boolean)) lines.push(JSON.parse(line));
      done();
    },
  });
  const api = await startApi({
    config: loadApiConfig({ LOG_LEVEL: level }),
    providerUrl: null,
    logger: createLogger({ level, name: 'test', destination }),
  });
  try {
    // /healthz answers without touching PostgreSQL or Temporal; /openapi.json stands for any route.
    for (const p of paths) await (await fetch(`${api.url}${p}`)).text();
  } finally {
    await api.close();
  }
  const urlOf = new Map(lines.filter((l) => l.req).map((l) => [l.reqId, l.req!.url]));
  return lines
    .filter((l) => l.msg === 'incoming request' || l.msg === 'request completed')
    .map((l) => ({ msg: `${l.level === 20 ? 'debug' : 'info'} ${l.msg}`, url: urlOf.get(l.reqId) }));
}

test('health probes are not logged at info; other requests are', async () => {
  expect(await logsOf('info', ['/healthz', '/openapi.json', '/healthz?x=1'])).toEqual([
    { msg: 'info incoming request', url: '/openapi.json' },
    { msg: 'info request completed', url: '/openapi.json' },
  ]);
});

test('health probes are logged at debug', async () => {
  expect(await logsOf('debug', ['/healthz'])).toEqual([
    { msg: 'debug incoming request', url: '/healthz' },
    { msg: 'debug request completed', url: '/healthz' },
  ]);
});
