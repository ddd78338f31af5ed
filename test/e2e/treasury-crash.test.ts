import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { createPublicClient, http, type Hex } from 'viem';
import { generatePrivateKey, privateKeyToAddress } from 'viem/accounts';
import { createActivities } from '../../src/activities';
import { createChainAndDenylistScreening } from '../../src/adapters/screening/receiver-screening';
import { countTransfersTo, createUsdtLedger } from '../../src/adapters/chain/usdt-ledger';
import { getOrCreateTreasuryTransfer } from '../../src/adapters/db/treasury-transfers-repo';
import type { PayoutResponse } from '../../src/domain/payout';
import { freePort } from '../../dev/local/infra/ports';
import { createLogger } from '../../src/observability/logger';
import { createMetrics } from '../../src/observability/metrics';
import { testDatabaseUrl } from '../support/env';
import { postPayout, startStack, VALID_PAYOUT, type TestStack } from '../support/stack';
import { rpc } from '../support/json-rpc';

const ROOT = path.resolve(__dirname, '../..');
// This stack's own treasury account (set once the stack is up).
let TREASURY: TestStack['treasury'];

/** A worker as its own OS process (`src/worker.ts` under tsx's loader), exactly as deployed. */
class WorkerProcess {
  readonly output: string[] = [];
  private readonly child: ChildProcess;
  private readonly exited: Promise<void>;

  constructor(env: Record<string, string>) {
    // One process (no tsx CLI wrapper in between), so SIGKILL hits the worker itself.
    this.child = spawn(process.execPath, ['--import', 'tsx', 'src/worker.ts'], {
      cwd: ROOT,
      env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    for (const stream of [this.child.stdout!, this.child.stderr!]) {
      stream.setEncoding('utf8');
      stream.on('data', (chunk: string) => this.output.push(...chunk.split('\n').filter(Boolean)));
    }
    this.exited = new Promise((resolve) => this.child.once('exit', () => resolve()));
  }

  async waitForLog(message: string, timeoutMs = 30_000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (Date.now() < deadline) {
      if (this.output.some((line) => line.includes(`"msg":"${message}"`))) return;
      if (this.child.exitCode !== null) break;
      await new Promise((r) => setTimeout(r, 50));
    }
    throw new Error(`worker never logged "${message}":\n${this.output.slice(-30).join('\n')}`);
  }

  async kill(signal: NodeJS.Signals = 'SIGKILL'): Promise<void> {
    if (this.child.exitCode === null && this.child.signalCode === null) this.child.kill(signal);
    await this.exited;
  }
}

async function until<T>(what: string, probe: () => Promise<T | undefined>, timeoutMs = 30_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    const value = await probe();
    if (value !== undefined) return value;
    await new Promise((r) => setTimeout(r, 20));
  }
  throw new Error(`timed out waiting for ${what}`);
}

// Treasury mode must pay exactly once even when the worker dies at the worst moment: after the
// transfer went out, before the workflow learnt anything about it.
describe('treasury transfer survives a worker crash (worker as a separate process)', () => {
  let stack: TestStack;
  let apiKey: string;
  let workerEnv: Record<string, string>;
  const workers: WorkerProcess[] = [];

  beforeAll(async () => {
    stack = await startStack({ env: { SETTLEMENT_MODE: 'treasury' }, worker: false });
    TREASURY = stack.treasury;
    ({ apiKey } = await stack.createPartner());
    const c = stack.config;
    workerEnv = {
      NODE_ENV: 'test',
      LOG_LEVEL: 'info',
      DATABASE_URL: testDatabaseUrl(),
      TEMPORAL_ADDRESS: c.TEMPORAL_ADDRESS,
      TEMPORAL_NAMESPACE: c.TEMPORAL_NAMESPACE,
      TEMPORAL_TASK_QUEUE: c.TEMPORAL_TASK_QUEUE,
      PROVIDER_API_URL: c.PROVIDER_API_URL,
      EVM_RPC_URL: c.EVM_RPC_URL,
      USDT_CONTRACT_ADDRESS: stack.usdtAddress,
      SANCTIONS_ORACLE_ADDRESS: stack.sanctionsOracleAddress,
      SETTLEMENT_MODE: 'treasury',
      TREASURY_PRIVATE_KEY: TREASURY.privateKey,
      PAYLOAD_ENCRYPTION_KEY: c.PAYLOAD_ENCRYPTION_KEY ?? '',
    };
  }, 120_000);
  afterAll(async () => {
    for (const w of workers) await w.kill();
    await rpc(stack.rpcUrl, 'evm_setAutomine', [true]).catch(() => {});
    await stack?.close();
  });

  async function startWorker(): Promise<WorkerProcess> {
    const worker = new WorkerProcess({
      ...workerEnv,
      WORKER_METRICS_PORT: String(await freePort()),
      METRICS_PORT: String(await freePort()),
    });
    workers.push(worker);
    await worker.waitForLog('worker started');
    return worker;
  }

  it('SIGKILLed right after the broadcast, a new worker completes the payout with exactly one transfer', async () => {
    const first = await startWorker();
    const receiver = privateKeyToAddress(generatePrivateKey());
    const created = await postPayout(stack.apiUrl, apiKey, { ...VALID_PAYOUT, receiver_wallet: receiver });
    expect(created.status).toBe(201);
    const payout = created.body as unknown as PayoutResponse;
    const nonceBefore = await rpc<Hex>(stack.rpcUrl, 'eth_getTransactionCount', [TREASURY.address, 'latest']);

    // Blocks only when the test says so: the broadcast transfer waits in the pool, unconfirmed.
    await rpc(stack.rpcUrl, 'evm_setAutomine', [false]);
    await stack.pay(payout.pix_copy_paste);

    // The signed transfer is stored, and the node has it: the worker has broadcast it. Kill now.
    const txHash = await until('the stored treasury transfer', async () => {
      const { rows } = await stack.db.query<{ tx_hash: Hex }>(
        'SELECT tx_hash FROM treasury_transfers WHERE payout_id = $1',
        [payout.id],
      );
      return rows[0]?.tx_hash;
    });
    await until('the transfer in the node', async () =>
      (await rpc<unknown>(stack.rpcUrl, 'eth_getTransactionByHash', [txHash])) ? true : undefined,
    );
    await first.kill('SIGKILL');

    const pool = await rpc<{ pending: Record<string, Record<string, unknown>> }>(
      stack.rpcUrl,
      'txpool_content',
    );
    const fromTreasury = Object.entries(pool.pending).find(
      ([from]) => from.toLowerCase() === TREASURY.address.toLowerCase(),
    );
    expect(Object.keys(fromTreasury?.[1] ?? {})).toHaveLength(1);
    const during = await stack.waitForStatus(apiKey, payout.id, ['PROCESSING', 'COMPLETED', 'FAILED']);
    expect(during.status).toBe('PROCESSING');

    // A new worker takes over; the chain then mines what is in the pool.
    const second = await startWorker();
    await rpc(stack.rpcUrl, 'evm_setAutomine', [true]);
    await rpc(stack.rpcUrl, 'evm_mine');
    const done = await stack.waitForStatus(apiKey, payout.id, ['COMPLETED', 'FAILED'], 50_000);

    expect(done).toMatchObject({
      status: 'COMPLETED',
      blockchain_tx_id: txHash,
      settled_amount_usdt: 17.152658,
    });
    const transfers = await countTransfersTo({
      rpcUrl: stack.rpcUrl,
      usdtAddress: stack.usdtAddress,
      to: receiver,
    });
    expect(transfers).toEqual({ count: 1, total: 17_152_658n, txHashes: [txHash] });
    const nonceAfter = await rpc<Hex>(stack.rpcUrl, 'eth_getTransactionCount', [TREASURY.address, 'latest']);
    expect(Number(nonceAfter) - Number(nonceBefore)).toBe(1); // nothing else was ever signed and sent
    const { rows } = await stack.db.query('SELECT tx_hash FROM treasury_transfers WHERE payout_id = $1', [
      payout.id,
    ]);
    expect(rows).toEqual([{ tx_hash: txHash }]);
    expect(second.output.join('\n')).not.toMatch(/"level":(50|60)/); // no error logged by the new worker
    await second.kill('SIGTERM');
  }, 60_000);

  describe('the activities behind it (real PostgreSQL and anvil, no Temporal)', () => {
    const activities = () =>
      createActivities({
        db: stack.db,
        provider: {} as never, // not used by the treasury activities
        // Only the denylist: these activity tests never screen (the screening step has tests of its own).
        screening: createChainAndDenylistScreening({
          rpcUrl: stack.rpcUrl,
          db: stack.db,
          sources: ['denylist'],
          tokenAddress: stack.usdtAddress,
          oracleAddress: stack.usdtAddress,
          cacheSeconds: 0,
        }),
        ledger: createUsdtLedger({
          rpcUrl: stack.rpcUrl,
          chainId: 42161,
          usdtAddress: stack.usdtAddress,
          treasuryPrivateKey: TREASURY.privateKey,
        }),
        logger: createLogger({ level: 'silent', name: 'test' }),
        metrics: createMetrics(),
      });

    it('after a crash between storing and broadcasting, retries send that stored transaction only', async () => {
      const acts = activities();
      const receiver = privateKeyToAddress(generatePrivateKey());
      const payoutId = crypto.randomUUID();
      const ledger = createUsdtLedger({
        rpcUrl: stack.rpcUrl,
        chainId: 42161,
        usdtAddress: stack.usdtAddress,
        treasuryPrivateKey: TREASURY.privateKey,
      });
      // The first attempt signed and stored the transfer, then its worker died before broadcasting.
      const stored = await getOrCreateTreasuryTransfer(
        stack.db,
        {
          payoutId,
          toAddress: receiver,
          amountUnits: 1_000_000n,
          chainId: 42161,
          fromAddress: TREASURY.address,
        },
        () => ledger.nextNonce(),
        (nonce) => ledger.signTransfer({ to: receiver, amountUnits: 1_000_000n, nonce }),
      );
      // Retries, even concurrent ones (a timed-out attempt still running), send that one transaction.
      const req = { payoutId, to: receiver, amountUnits: '1000000' };
      const sent = await Promise.all([acts.sendTreasuryTransfer(req), acts.sendTreasuryTransfer(req)]);
      expect(sent).toEqual([{ txHash: stored.txHash }, { txHash: stored.txHash }]);
      await expect(acts.confirmTreasuryTransfer({ ...req, minConfirmations: 1 })).resolves.toMatchObject({
        status: 'confirmed',
      });
      expect(
        await countTransfersTo({ rpcUrl: stack.rpcUrl, usdtAddress: stack.usdtAddress, to: receiver }),
      ).toEqual({
        count: 1,
        total: 1_000_000n,
        txHashes: [stored.txHash],
      });
    });

    it('broadcasts the stored transaction again when the node dropped it from its pool', async () => {
      const acts = activities();
      const receiver = privateKeyToAddress(generatePrivateKey());
      const req = { payoutId: crypto.randomUUID(), to: receiver, amountUnits: '2000000' };
      await rpc(stack.rpcUrl, 'evm_setAutomine', [false]);
      try {
        const { txHash } = await acts.sendTreasuryTransfer(req);
        await rpc(stack.rpcUrl, 'anvil_dropTransaction', [txHash]);
        const client = createPublicClient({ transport: http(stack.rpcUrl) });
        await expect(client.getTransaction({ hash: txHash })).rejects.toThrow();

        // Not found: sent again, and still waiting for a block.
        await expect(acts.confirmTreasuryTransfer({ ...req, minConfirmations: 1 })).rejects.toThrow(
          /broadcast again/,
        );
        expect((await client.getTransaction({ hash: txHash })).hash).toBe(txHash);
        await rpc(stack.rpcUrl, 'evm_mine');
        await expect(acts.confirmTreasuryTransfer({ ...req, minConfirmations: 1 })).resolves.toMatchObject({
          status: 'confirmed',
        });
      } finally {
        await rpc(stack.rpcUrl, 'evm_setAutomine', [true]);
      }
      const transfers = await countTransfersTo({
        rpcUrl: stack.rpcUrl,
        usdtAddress: stack.usdtAddress,
        to: receiver,
      });
      expect(transfers.count).toBe(1);
    });
  });
});
