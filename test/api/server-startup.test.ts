import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import path from 'node:path';
import { freePort } from '../../dev/local/infra/ports';

// The api as production starts it (`src/main/api.ts`, its own OS process): settings that must
// stop it do so before it serves anything, with a message naming the variable.
const ROOT = path.resolve(__dirname, '../..');

async function startApi(env: Record<string, string>): Promise<{ code: number | null; stderr: string }> {
  const child = spawn(path.join(ROOT, 'node_modules/.bin/tsx'), ['src/main/api.ts'], {
    cwd: ROOT,
    env: {
      PATH: process.env.PATH,
      HOME: process.env.HOME,
      LOG_LEVEL: 'silent',
      HOST: '127.0.0.1',
      PORT: String(await freePort()),
      METRICS_PORT: String(await freePort()),
      // Nothing listens here: a process that got past the check would fail on it instead.
      DATABASE_URL: `postgres://postgres:password@127.0.0.1:${await freePort()}/none`,
      ...env,
    },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let stderr = '';
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const code = await new Promise<number | null>((resolve) => child.on('exit', resolve));
  return { code, stderr };
}

describe('api start-up', () => {
  it('refuses to start in production without CODEC_AUTH_TOKEN, naming the variable', async () => {
    const { code, stderr } = await startApi({
      NODE_ENV: 'production',
      PAYLOAD_ENCRYPTION_KEY: randomBytes(32).toString('base64'),
    });
    expect(code).toBe(1);
    expect(stderr).toContain('CODEC_AUTH_TOKEN is required when NODE_ENV=production');
  });

  it('with CODEC_AUTH_TOKEN set, production gets past the codec check (and stops on the next missing piece)', async () => {
    const { code, stderr } = await startApi({
      NODE_ENV: 'production',
      PAYLOAD_ENCRYPTION_KEY: randomBytes(32).toString('base64'),
      CODEC_AUTH_TOKEN: randomBytes(24).toString('base64url'),
    });
    expect(code).toBe(1);
    expect(stderr).not.toContain('CODEC_AUTH_TOKEN');
    expect(stderr).toMatch(/ECONNREFUSED|connect/);
  });
});
