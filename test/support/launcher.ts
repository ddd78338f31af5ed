import { spawn, type ChildProcess } from 'node:child_process';
import { chmodSync, mkdtempSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import readline from 'node:readline';
import { pathToFileURL } from 'node:url';
import { freePort } from '../../dev/local/infra/ports';
import { workflowBundle } from './stack';

/**
 * The real launcher (`dev/local/start.ts`, as `npm start` runs it) on free loopback ports and a data
 * folder of its own. Waits are on its log lines, never on time.
 */
const ROOT = path.resolve(__dirname, '../..');

export interface Launch {
  proc: ChildProcess;
  lines: string[];
  exited: Promise<number | null>;
  /** Resolves with the first line (seen so far or later) matching; rejects when the launcher exits first. */
  waitFor(pattern: RegExp): Promise<string>;
}

/** A private data folder and free ports for one launcher, as the environment `npm start` reads. */
export async function launcherEnv(extra: Record<string, string> = {}): Promise<{
  env: NodeJS.ProcessEnv;
  data: string;
  apiUrl: string;
}> {
  const data = mkdtempSync(path.join(os.tmpdir(), 'payouts-launcher-'));
  // As root the postgres user must reach the data folder (mkdtemp makes it 0700).
  chmodSync(data, 0o755);
  const bundle = path.join(data, 'workflow-bundle.js');
  writeFileSync(bundle, (await workflowBundle()).code);
  const port = () => freePort().then(String);
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    LOCAL_DATA_DIR: path.join(data, 'data'),
    LOCAL_POSTGRES_PORT: await port(),
    LOCAL_TEMPORAL_PORT: await port(),
    LOCAL_TEMPORAL_UI_PORT: await port(),
    LOCAL_ANVIL_PORT: await port(),
    SANDBOX_PORT: await port(),
    SANDBOX_API_PIX_PORT: await port(),
    PORT: await port(),
    METRICS_PORT: await port(),
    WORKER_METRICS_PORT: await port(),
    // One webpack run for the file instead of one per worker start.
    WORKFLOW_BUNDLE_PATH: bundle,
    LOG_LEVEL: 'info',
    ...extra,
  };
  for (const key of [
    'DATABASE_URL',
    'TEMPORAL_ADDRESS',
    'EVM_RPC_URL',
    'PROVIDER_API_URL',
    'USDT_CONTRACT_ADDRESS',
    'SANCTIONS_ORACLE_ADDRESS',
    'PIX_API_URL',
  ])
    delete env[key];
  return { env, data, apiUrl: `http://127.0.0.1:${env.PORT}` };
}

export function launch(env: NodeJS.ProcessEnv): Launch {
  // Its own process group, as a terminal's foreground job: signals to the group are a Ctrl-C or
  // a closed terminal.
  const proc = spawn(
    process.execPath,
    ['--import', pathToFileURL(require.resolve('tsx')).href, 'dev/local/start.ts'],
    {
      cwd: ROOT,
      env,
      detached: true,
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  const lines: string[] = [];
  const waiters = new Set<() => void>();
  const exited = new Promise<number | null>((resolve) => proc.once('exit', (code) => resolve(code)));
  for (const stream of [proc.stdout!, proc.stderr!]) {
    readline.createInterface({ input: stream }).on('line', (line) => {
      lines.push(line);
      if (process.env.TEST_LOG) process.stdout.write(`${line}\n`);
      for (const w of waiters) w();
    });
  }
  const waitFor = (pattern: RegExp) =>
    new Promise<string>((resolve, reject) => {
      const check = () => {
        const hit = lines.find((l) => pattern.test(l));
        if (hit) {
          waiters.delete(check);
          resolve(hit);
        }
      };
      waiters.add(check);
      check();
      void exited.then(() => {
        check();
        if (waiters.delete(check))
          reject(new Error(`launcher exited before ${pattern}:\n${lines.slice(-30).join('\n')}`));
      });
    });
  return { proc, lines, exited, waitFor };
}

/** The launcher's own messages (not its services' log lines). */
export const launcherMessages = (l: Launch) =>
  l.lines.flatMap((line) => {
    try {
      const parsed = JSON.parse(line) as { source?: string; msg?: string };
      return parsed.source === 'local' && parsed.msg ? [parsed.msg] : [];
    } catch {
      return [];
    }
  });
