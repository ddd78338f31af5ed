import { execFile } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { loadApiConfig } from '../../src/config';
import { startApi, type RunningApi } from '../support/api';

// The document the api serves, linted by Redocly CLI (redocly.yaml: its `recommended` rules) and
// Spectral (.spectral.yaml: `spectral:oas`), both at their own severities: nothing may be reported,
// not even a warning. A finding is fixed in the route schemas or src/api/docs, not silenced here.

const ROOT = path.resolve(__dirname, '../..');
const run = promisify(execFile);
const bin = (name: string) => path.join(ROOT, 'node_modules/.bin', name);

/** A CLI's stdout whatever its exit code: both exit non-zero when they report a problem. */
async function stdoutOf(command: string, args: string[]): Promise<string> {
  try {
    return (await run(command, args, { cwd: ROOT, maxBuffer: 16 * 1024 * 1024 })).stdout;
  } catch (err) {
    const { stdout, stderr } = err as { stdout?: string; stderr?: string };
    if (!stdout?.trim()) throw new Error(`${command} failed without a report:\n${stderr ?? String(err)}`);
    return stdout;
  }
}

describe('OpenAPI document lint', () => {
  let api: RunningApi;
  let dir: string;
  let file: string;

  beforeAll(async () => {
    // A deployment's base URL (`.test` is reserved for this, RFC 2606): the document is linted as a
    // deployment serves it, and Redocly rightly flags example.com or localhost as a server.
    const config = loadApiConfig({
      LOG_LEVEL: 'silent',
      PUBLIC_BASE_URL: 'https://payouts.partner-api.test',
    });
    api = await startApi({ config, providerUrl: null });
    const res = await fetch(`${api.url}/openapi.json`);
    expect(res.status).toBe(200);
    dir = await mkdtemp(path.join(os.tmpdir(), 'payouts-openapi-lint-'));
    file = path.join(dir, 'openapi.json');
    await writeFile(file, await res.text());
  });
  afterAll(async () => {
    await api?.close();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('passes Redocly recommended with no error and no warning', async () => {
    const out = await stdoutOf(bin('redocly'), [
      'lint',
      file,
      '--config',
      path.join(ROOT, 'redocly.yaml'),
      '--format',
      'json',
    ]);
    const report = JSON.parse(out) as {
      totals: { errors: number; warnings: number };
      problems: { ruleId: string; message: string; location: { pointer?: string }[] }[];
    };
    expect(report.problems.map((p) => `${p.ruleId} ${p.location[0]?.pointer}: ${p.message}`)).toEqual([]);
    expect(report.totals).toMatchObject({ errors: 0, warnings: 0 });
  }, 60_000);

  it('passes Spectral spectral:oas with no error and no warning', async () => {
    const out = await stdoutOf(bin('spectral'), [
      'lint',
      file,
      '--ruleset',
      path.join(ROOT, '.spectral.yaml'),
      '--format',
      'json',
      '--quiet',
    ]);
    const results = JSON.parse(out || '[]') as { code: string; path: string[]; message: string }[];
    expect(results.map((r) => `${r.code} ${r.path.join('.')}: ${r.message}`)).toEqual([]);
  }, 60_000);

  it('reports what it finds (a known-bad document fails both)', async () => {
    const bad = path.join(dir, 'bad.json');
    await writeFile(
      bad,
      JSON.stringify({
        openapi: '3.1.0',
        info: { title: 'bad', version: '1' },
        paths: { '/x': { get: { responses: { '200': { description: 'ok' } } } } },
      }),
    );
    const redocly = JSON.parse(
      await stdoutOf(bin('redocly'), [
        'lint',
        bad,
        '--config',
        path.join(ROOT, 'redocly.yaml'),
        '--format',
        'json',
      ]),
    ) as { problems: unknown[] };
    expect(redocly.problems.length).toBeGreaterThan(0);
    const spectral = JSON.parse(
      await stdoutOf(bin('spectral'), [
        'lint',
        bad,
        '--ruleset',
        path.join(ROOT, '.spectral.yaml'),
        '--format',
        'json',
      ]),
    ) as unknown[];
    expect(spectral.length).toBeGreaterThan(0);
  }, 60_000);
});
