import { execFile } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { temporal } from '@temporalio/proto';
import { bundleWorkflowCode, Worker } from '@temporalio/worker';
import { DeterminismViolationError } from '@temporalio/workflow';
import { generatePrivateKey, privateKeyToAddress } from 'viem/accounts';
import type { PayoutResponse } from '../../src/domain/payout';
import { createDataConverter } from '../../src/temporal/data-converter';
import { payoutWorkflowId } from '../../src/workflows/payout.contract';
import { startProcessStack, type ApiProcess, type ProcessStack } from '../support/process-stack';
import { compiledEntry } from '../support/compiled';
import { until } from '../support/until';
import { workflowBundle } from '../support/stack';
import { payloadKeysOf } from '../../src/main/wiring';
import { tracingSinks } from '../../src/temporal/tracing';

// Worker Versioning on a real Temporal dev server, with the service's real processes: two builds of
// the worker whose payout workflow code is incompatible (test/e2e/fixtures/next-build-workflows.ts),
// payouts in flight on both, a deploy (`admin deploy promote` of the new build) and a rollback (the
// same for the old one). Every payout must finish on the build that started it, with no failed
// workflow task, while both builds poll the same task queue.

const ROOT = path.resolve(__dirname, '../..');
const run = promisify(execFile);
const BUILD_A = 'build-a'; // the service's worker as it is
const BUILD_B = 'build-b'; // the same worker with other payout workflow code
const PINNED = temporal.api.enums.v1.VersioningBehavior.VERSIONING_BEHAVIOR_PINNED;
const silent = { log() {}, trace() {}, debug() {}, info() {}, warn() {}, error() {} };

describe('worker versioning: two worker builds, one Temporal server, payouts in flight', () => {
  let stack: ProcessStack;
  let api: ApiProcess;
  let partner: { partnerId: string; apiKey: string };
  let scratch: string;
  let bundleA: string;
  let bundleB: string;
  let bundleBPath: string;

  beforeAll(async () => {
    stack = await startProcessStack();
    partner = await stack.createPartner();
    api = await stack.startApi();
    scratch = await mkdtemp(path.join(os.tmpdir(), 'payouts-versioning-'));
    bundleA = (await workflowBundle()).code;
    bundleB = (
      await bundleWorkflowCode({
        workflowsPath: require.resolve('./fixtures/next-build-workflows'),
        logger: silent,
      })
    ).code;
    bundleBPath = path.join(scratch, 'next-build-workflow-bundle.js');
    await writeFile(bundleBPath, bundleB);
  }, 240_000);

  afterAll(async () => {
    await stack?.close();
    if (scratch) await rm(scratch, { recursive: true, force: true });
  });

  afterEach(() => {
    const state = expect.getState();
    if (state.suppressedErrors.length > 0) {
      for (const p of stack.processes) process.stderr.write(`--- ${p.name}\n${p.tail(20)}\n`);
    }
  });

  /** The admin CLI as a deployer runs it, against the stack's Temporal. */
  async function admin(
    args: string[],
  ): Promise<{ code: number; out: Record<string, unknown>; stderr: string }> {
    try {
      const { stdout, stderr } = await run(
        process.execPath,
        [await compiledEntry('src/main/admin.ts'), ...args],
        {
          cwd: ROOT,
          env: { PATH: process.env.PATH, HOME: process.env.HOME, ...stack.serviceEnv },
          timeout: 30_000,
        },
      );
      return { code: 0, out: JSON.parse(stdout) as Record<string, unknown>, stderr };
    } catch (err) {
      const e = err as { code?: number; stderr?: string };
      if (typeof e.code !== 'number') throw err;
      return { code: e.code, out: {}, stderr: e.stderr ?? '' };
    }
  }

  async function create(): Promise<PayoutResponse> {
    const res = await fetch(`${api.url}/v1/payouts`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-api-key': partner.apiKey },
      body: JSON.stringify({
        amount_brl: 100,
        pix_key: '12345678901',
        pix_key_type: 'CPF',
        receiver_wallet: privateKeyToAddress(generatePrivateKey()),
      }),
    });
    const body = (await res.json()) as PayoutResponse;
    if (res.status !== 201) throw new Error(`POST answered ${res.status}: ${JSON.stringify(body)}`);
    expect(body.status).toBe('PENDING');
    return body;
  }

  const handle = (payout: PayoutResponse) => stack.temporal.workflow.getHandle(payoutWorkflowId(payout.id));

  /** The build the server pins the payout's workflow to, and how. */
  /**
   * The build the payout's workflow is pinned to. POST answers before a worker has run its first task
   * (D81), and a run is pinned by the build that completes that task: it is waited for.
   */
  async function pinning(payout: PayoutResponse): Promise<{ buildId?: string; behavior?: unknown }> {
    return until(`payout ${payout.id} to be pinned to a build`, async () => {
      const info = (await handle(payout).describe()).raw.workflowExecutionInfo?.versioningInfo;
      const buildId = info?.deploymentVersion?.buildId ?? undefined;
      return buildId === undefined ? undefined : { buildId, behavior: info?.behavior };
    });
  }

  /** Which builds completed the payout's workflow tasks, and how many workflow tasks failed. */
  async function taskHistory(history: temporal.api.history.v1.IHistory) {
    const builds = new Set<string>();
    let failedTasks = 0;
    for (const event of history.events ?? []) {
      const completed = event.workflowTaskCompletedEventAttributes;
      if (completed) builds.add(completed.deploymentVersion?.buildId ?? '(unversioned)');
      if (event.workflowTaskFailedEventAttributes) failedTasks += 1;
    }
    return { builds: [...builds], failedTasks };
  }

  async function pay(payout: PayoutResponse): Promise<PayoutResponse> {
    await stack.pay(payout.pix_copy_paste);
    const done = await stack.waitForStatus(partner.apiKey, payout.id, ['COMPLETED', 'FAILED']);
    expect({ id: payout.id, status: done.status }).toEqual({ id: payout.id, status: 'COMPLETED' });
    return done;
  }

  async function pinnedOpen(): Promise<Record<string, number>> {
    const status = await admin(['deploy', 'status']);
    expect(status.code).toBe(0);
    const versions = status.out.versions as { build_id: string; pinned_open_workflows: number }[];
    return Object.fromEntries(versions.map((v) => [v.build_id, v.pinned_open_workflows]));
  }

  it('deploys build B and rolls back to A: every payout finishes on the build that started it', async () => {
    // Build A, alone: the service's worker as the local stack runs it, promoting itself.
    const workerA = await stack.startWorker({
      TEMPORAL_WORKER_BUILD_ID: BUILD_A,
      TEMPORAL_WORKER_SET_CURRENT: 'true',
    });
    await workerA.waitForLog('worker deployment version is current');
    const onA = await create(); // waits for its PIX payment: in flight on A
    expect(await pinning(onA)).toEqual({ buildId: BUILD_A, behavior: PINNED });

    // Deploy: build B starts polling the same task queue, then the deployer promotes it.
    const workerB = await stack.startWorker({
      TEMPORAL_WORKER_BUILD_ID: BUILD_B,
      WORKFLOW_BUNDLE_PATH: bundleBPath,
    });
    const promoted = await until('build B polling and promoted', async () => {
      const result = await admin(['deploy', 'promote', '--build-id', BUILD_B]);
      return result.code === 0 ? result.out : undefined;
    });
    expect(promoted).toEqual({
      deployment: 'pix-usdt-payouts',
      current_build_id: BUILD_B,
      previous_build_id: BUILD_A,
    });
    const onB = await create();
    expect(await pinning(onB)).toEqual({ buildId: BUILD_B, behavior: PINNED });
    expect(await pinnedOpen()).toMatchObject({ [BUILD_A]: 1, [BUILD_B]: 1 });

    // A's payout moves on while B is current: its payment (whose provider-event workflow now runs
    // on B) completes it on A.
    await pay(onA);
    expect(await pinning(onA)).toMatchObject({ buildId: BUILD_A });

    // Rollback: A is current again; B keeps the payout it started.
    const rolledBack = await admin(['deploy', 'promote', '--build-id', BUILD_A]);
    expect(rolledBack.out).toMatchObject({ current_build_id: BUILD_A, previous_build_id: BUILD_B });
    const afterRollback = await create();
    expect(await pinning(afterRollback)).toEqual({ buildId: BUILD_A, behavior: PINNED });
    await Promise.all([pay(onB), pay(afterRollback)]);

    // Every workflow task of each payout was completed by the build that started it; none failed.
    const histories = new Map<PayoutResponse, temporal.api.history.v1.IHistory>();
    for (const payout of [onA, onB, afterRollback])
      histories.set(payout, await handle(payout).fetchHistory());
    expect(await taskHistory(histories.get(onA)!)).toEqual({ builds: [BUILD_A], failedTasks: 0 });
    expect(await taskHistory(histories.get(onB)!)).toEqual({ builds: [BUILD_B], failedTasks: 0 });
    expect(await taskHistory(histories.get(afterRollback)!)).toEqual({ builds: [BUILD_A], failedTasks: 0 });
    for (const worker of [workerA, workerB]) {
      expect(worker.output.filter((line) => /TMPRL1100|[Nn]ondeterminism/.test(line))).toEqual([]);
    }

    // Nothing is left pinned to either build: both could now be stopped.
    await until('both builds drained', async () => {
      const open = await pinnedOpen();
      return open[BUILD_A] === 0 && open[BUILD_B] === 0 ? open : undefined;
    });

    // The control: the two builds really cannot replay each other's payouts, so the above is the
    // pinning at work. Each history replays on its own build and fails on the other.
    // (The SDK core logs the two expected failures as WARN "[TMPRL1100] Nondeterminism error" lines.)
    const dataConverter = createDataConverter(
      payloadKeysOf({
        PAYLOAD_ENCRYPTION_KEY: stack.serviceEnv.PAYLOAD_ENCRYPTION_KEY,
      }),
    );
    const replay = (code: string, payout: PayoutResponse) =>
      Worker.runReplayHistory(
        { sinks: tracingSinks(), workflowBundle: { code }, dataConverter },
        histories.get(payout)!,
        payoutWorkflowId(payout.id),
      );
    await replay(bundleA, onA);
    await replay(bundleB, onB);
    await expect(replay(bundleB, onA)).rejects.toBeInstanceOf(DeterminismViolationError);
    await expect(replay(bundleA, onB)).rejects.toBeInstanceOf(DeterminismViolationError);
  }, 300_000);
});
