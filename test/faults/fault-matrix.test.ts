import { randomUUID } from 'node:crypto';
import type { Address, Hex } from 'viem';
import { generatePrivateKey, privateKeyToAddress } from 'viem/accounts';
import type { PayoutResponse } from '../../src/domain/payout';
import {
  expectNoneWaitingUnflagged,
  expectNoOrphans,
  expectPayoutInvariants,
  type TrackedPayout,
} from '../support/payout-invariants';
import { startProcessStack, type ApiProcess, type ProcessStack } from '../support/process-stack';
import { until } from '../support/until';
import type { ServiceProcess } from '../support/service-process';
import { freePort } from '../../dev/local/infra/ports';

// The fault matrix of docs/reliability.md, on real processes: the api and the worker are separate
// OS processes that are SIGKILLed; Temporal, PostgreSQL and the provider are taken down and brought
// back. After each fault every payout must end in the right state with exactly one charge, at most
// one on-chain transfer, and the read model equal to the workflow (test/support/payout-invariants.ts),
// and no payout may wait past its expiry or deadline without an attention item.

const AMOUNT = { amount_brl: 100.0, pix_key: '12345678901', pix_key_type: 'CPF' } as const;
/** The services' defaults (the stack sets neither PIX_CHARGE_EXPIRY_SECONDS nor SETTLEMENT_TIMEOUT_SECONDS). */
const LIMITS = { chargeExpirySeconds: 3600, settlementTimeoutSeconds: 21_600 };

describe('fault matrix (api and worker as processes; Temporal, PostgreSQL, provider restarted)', () => {
  let stack: ProcessStack;
  let partner: { partnerId: string; apiKey: string };
  let mainApi: ApiProcess;
  let treasuryApi: ApiProcess;
  let worker: ServiceProcess;
  const tracked: TrackedPayout[] = [];
  const startedAt = Date.now();

  beforeAll(async () => {
    // A killed worker's workflow task is retried after 4 s rather than the server's default 10 s.
    stack = await startProcessStack({ workflowTaskTimeout: '4s' });
    partner = await stack.createPartner();
    [mainApi, treasuryApi, worker] = await Promise.all([
      stack.startApi(),
      freePort().then((port) => stack.startApi({ port, mode: 'treasury' })),
      stack.startWorker(),
    ]);
  }, 240_000);

  afterAll(async () => {
    await stack?.close();
    process.stdout.write(
      `fault matrix: ${tracked.length} payouts in ${Math.round((Date.now() - startedAt) / 1000)} s\n`,
    );
  });

  /**
   * One point of the matrix. On a failure, or when it runs out of time (a little before jest's own
   * timeout, which would abandon it silently), what every service said last is printed. Each point
   * ends what it started, so whatever ran before, after it: no payout waits past its expiry or
   * deadline without an attention item, none is left open, the provider holds no charge without a
   * payout, and no worker logged an error nobody planned for.
   */
  function point(name: string, run: () => Promise<void>, timeoutMs: number): void {
    globalThis.it(
      name,
      async () => {
        const started = Date.now();
        let timer: NodeJS.Timeout | undefined;
        try {
          await Promise.race([
            run(),
            new Promise<never>((_, reject) => {
              timer = setTimeout(
                () => reject(new Error(`${name}: no end after ${timeoutMs - 5_000} ms`)),
                timeoutMs - 5_000,
              );
            }),
          ]);
          await expectNoneWaitingUnflagged(stack.db, LIMITS);
          await expectNoOrphans(stack);
          expectNoUnplannedErrors();
        } catch (err) {
          for (const p of stack.processes) process.stderr.write(`--- ${p.name}\n${p.tail(40)}\n`);
          throw err;
        } finally {
          clearTimeout(timer);
          process.stdout.write(`${name}: ${Date.now() - started} ms\n`);
        }
      },
      timeoutMs,
    );
  }
  // Every point below goes through it: `it` here is the matrix's point, not jest's bare test.
  const it = point;

  async function create(
    apiUrl = mainApi.url,
    headers: Record<string, string> = {},
  ): Promise<{
    payout: PayoutResponse;
    receiver: Address;
  }> {
    const receiver = privateKeyToAddress(generatePrivateKey());
    const res = await fetch(`${apiUrl}/v1/payouts`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-api-key': partner.apiKey, ...headers },
      body: JSON.stringify({ ...AMOUNT, receiver_wallet: receiver }),
    });
    const body = (await res.json()) as PayoutResponse;
    if (res.status !== 201) throw new Error(`POST answered ${res.status}: ${JSON.stringify(body)}`);
    return { payout: body, receiver };
  }

  function track(
    created: { payout: PayoutResponse; receiver: Address },
    paid: boolean,
    expected: TrackedPayout['expected'] = 'COMPLETED',
    failureReason?: string,
  ): TrackedPayout {
    const t: TrackedPayout = {
      ...partner,
      id: created.payout.id,
      receiver: created.receiver,
      paid,
      expected,
      ...(failureReason ? { failureReason } : {}),
    };
    tracked.push(t);
    return t;
  }

  /**
   * Every worker of the run, the killed ones included. Lines with an "event" are alerts, error-level
   * by design (docs/alerts); anything else is a failure nobody planned for.
   */
  function expectNoUnplannedErrors(): void {
    for (const w of stack.processes.filter((p) => p.name.startsWith('worker'))) {
      expect({ worker: w.name, errors: w.errors().filter((l) => !l.includes('"event":"')) }).toEqual({
        worker: w.name,
        errors: [],
      });
    }
  }

  async function readModelStatus(id: string): Promise<string | undefined> {
    const { rows } = await stack.db.query<{ status: string }>('SELECT status FROM payouts WHERE id = $1', [
      id,
    ]);
    return rows[0]?.status;
  }

  /**
   * Runs `fault` while both apis serve a stream of partner reads, so that some hold a pooled client
   * (a query in flight) when the server they depend on goes away.
   */
  async function underLoad(fault: () => Promise<void>): Promise<void> {
    let reading = true;
    const read = async (url: string) => {
      while (reading) {
        await fetch(`${url}/v1/payouts?limit=1`, { headers: { 'x-api-key': partner.apiKey } }).then(
          (r) => r.arrayBuffer(),
          () => undefined,
        );
      }
    };
    const readers = [mainApi.url, treasuryApi.url].map(read);
    try {
      await fault();
    } finally {
      reading = false;
      await Promise.all(readers);
    }
  }

  async function replaceWorker(): Promise<void> {
    await worker.kill('SIGKILL');
    worker = await stack.startWorker();
  }

  it('worker SIGKILLed after the charge is created: the payment is still settled', async () => {
    const payouts = await Promise.all([create(), create()]);
    // POST answered with the charge: it exists. The workflow now waits for the payment.
    await replaceWorker();
    for (const p of payouts) await stack.pay(p.payout.pix_copy_paste);
    for (const p of payouts) await expectPayoutInvariants(stack, track(p, true));
  }, 120_000);

  it('worker SIGKILLed after the PIX payment is applied (PROCESSING): settled once', async () => {
    const p = await create();
    // The provider's transfer stays in the node's pool until the kill: the payout cannot get past
    // PROCESSING before it, however fast the rest of the path is.
    await stack.chain.setAutomine(false);
    try {
      await stack.pay(p.payout.pix_copy_paste);
      await until('the payment applied (PROCESSING in the read model)', async () =>
        (await readModelStatus(p.payout.id)) !== 'PENDING' ? true : undefined,
      );
      expect(await readModelStatus(p.payout.id)).toBe('PROCESSING');
      await replaceWorker();
    } finally {
      await stack.chain.setAutomine(true);
      await stack.chain.mine();
    }
    await expectPayoutInvariants(stack, track(p, true));
  }, 120_000);

  it('worker SIGKILLed after the treasury transfer is broadcast, and again once it is mined (just before COMPLETED)', async () => {
    const payouts = await Promise.all([create(treasuryApi.url), create(treasuryApi.url)]);
    await stack.chain.setAutomine(false);
    try {
      for (const p of payouts) await stack.pay(p.payout.pix_copy_paste);
      // Both transfers signed, stored and in the node's pool: broadcast. Kill now.
      const hashes = await until('both treasury transfers in the node', async () => {
        const { rows } = await stack.db.query<{ tx_hash: Hex }>(
          'SELECT tx_hash FROM treasury_transfers WHERE payout_id = ANY($1)',
          [payouts.map((p) => p.payout.id)],
        );
        if (rows.length < 2) return undefined;
        for (const { tx_hash } of rows) {
          if (!(await stack.chain.rpc('eth_getTransactionByHash', [tx_hash]))) return undefined;
        }
        return rows.map((r) => r.tx_hash);
      });
      await replaceWorker();

      // Mined now, while the new worker's confirmation is between retries: kill it before it records.
      await stack.chain.mine();
      const receipts = await Promise.all(
        hashes.map((h) => stack.chain.rpc<{ status: string } | null>('eth_getTransactionReceipt', [h])),
      );
      expect(receipts.map((r) => r?.status)).toEqual(['0x1', '0x1']);
      await worker.kill('SIGKILL');
      // Read after the kill, when no worker can write any more: the kill landed before COMPLETED for
      // at least one of them (otherwise this step proved nothing).
      const statuses = await Promise.all(payouts.map((p) => readModelStatus(p.payout.id)));
      worker = await stack.startWorker();
      expect(statuses).toContain('PROCESSING');
    } finally {
      await stack.chain.setAutomine(true);
    }
    for (const p of payouts) await expectPayoutInvariants(stack, track(p, true));
  }, 150_000);

  it('worker SIGKILLed in the middle of an activity (the settlement request, answer lost): settled once', async () => {
    const p = await create();
    // The settlement request reaches the provider and waits there: the worker is busy in it.
    const held = stack.provider.hold('POST /settlements');
    try {
      await stack.pay(p.payout.pix_copy_paste);
      await held.arrived;
      await worker.kill('SIGKILL');
    } finally {
      // Forwarded now, to a caller that is gone: the provider accepts it and sends the USDT, and
      // the answer is lost. The next worker must ask again (same external id) and settle once.
      held.release();
    }
    // Read after the kill: it landed while the payout was PROCESSING.
    expect(await readModelStatus(p.payout.id)).toBe('PROCESSING');
    worker = await stack.startWorker();
    await expectPayoutInvariants(stack, track(p, true));
    expect(stack.provider.settlementRequests().get(p.payout.id)).toBeGreaterThanOrEqual(2);
  }, 120_000);

  it('api SIGKILLed in the middle of POSTs that the clients retry with the same Idempotency-Key: one payout and one charge per key', async () => {
    const keys = Array.from({ length: 6 }, () => `fault-${randomUUID()}`);
    const before = stack.provider.chargesCreated().size;
    // Clients retry until they get an answer, as a partner's HTTP client would.
    const results = keys.map(async (key) => {
      for (let attempt = 1; ; attempt++) {
        try {
          const res = await fetch(`${mainApi.url}/v1/payouts`, {
            method: 'POST',
            headers: {
              'content-type': 'application/json',
              'x-api-key': partner.apiKey,
              'idempotency-key': key,
            },
            body: JSON.stringify({ ...AMOUNT, receiver_wallet: privateKeyToAddress(generatePrivateKey()) }),
          });
          // 409: the same key is still in flight (the killed request's claim, until its lease runs
          // out); try again shortly.
          if (res.status === 201 || res.status === 200)
            return { key, attempt, body: (await res.json()) as PayoutResponse };
          if (res.status !== 409 && res.status < 500) throw new Error(`POST answered ${res.status}`);
        } catch (err) {
          if (err instanceof Error && err.message.startsWith('POST answered')) throw err;
        }
        await new Promise((r) => setTimeout(r, 500));
      }
    });
    // Some of these POSTs reached the provider; kill the api while the rest are in flight.
    await until('a charge created by this storm', async () =>
      stack.provider.chargesCreated().size > before ? true : undefined,
    );
    await mainApi.process.kill('SIGKILL');
    // The killed requests' claims are no longer renewed: their leases run out within
    // CLAIM_LEASE_SECONDS (2 s, docs/decisions.md D73), and the retries take them over.
    mainApi = await stack.startApi();
    const answered = await Promise.all(results);
    for (const { body } of answered) await stack.pay(body.pix_copy_paste);

    const { rows } = await stack.db.query<{ key: string; payout_id: string }>(
      'SELECT key, payout_id FROM idempotency_keys WHERE partner_id = $1 AND key = ANY($2)',
      [partner.partnerId, keys],
    );
    expect(rows).toHaveLength(keys.length);
    expect(new Set(rows.map((r) => r.payout_id)).size).toBe(keys.length);
    for (const { key, body } of answered) {
      expect(rows.find((r) => r.key === key)?.payout_id).toBe(body.id);
    }
    // The kill interrupted requests: some clients needed more than one attempt.
    expect(answered.some((a) => a.attempt > 1)).toBe(true);
    // Each retry carried another wallet: the answer is the first request's payout, unchanged.
    for (const { body } of answered) {
      await expectPayoutInvariants(
        stack,
        track({ payout: body, receiver: body.receiver_wallet as Address }, true),
      );
    }
  }, 150_000);

  it('Temporal dev server restarted (same SQLite file) with payouts in flight, paid while it is down', async () => {
    const payouts = await Promise.all([create(), create(), create()]);
    await stack.pay(payouts[0]!.payout.pix_copy_paste);
    await stack.restartTemporal(async () => {
      // Paid while Temporal is down: the webhooks cannot start their workflows and are retried.
      for (const p of payouts.slice(1)) await stack.pay(p.payout.pix_copy_paste);
    });
    for (const p of payouts) await expectPayoutInvariants(stack, track(p, true));
  }, 150_000);

  it('Temporal dev server SIGKILLed (nothing flushed) with payouts in flight, paid while it is down', async () => {
    const payouts = await Promise.all([create(), create(), create()]);
    await stack.pay(payouts[0]!.payout.pix_copy_paste);
    await stack.restartTemporal(async () => {
      for (const p of payouts.slice(1)) await stack.pay(p.payout.pix_copy_paste);
    }, 'SIGKILL');
    for (const p of payouts) await expectPayoutInvariants(stack, track(p, true));
  }, 150_000);

  it('PostgreSQL restarted with payouts in flight, paid while it is down', async () => {
    const payouts = await Promise.all([create(), create(), create()]);
    await stack.pay(payouts[0]!.payout.pix_copy_paste);
    await underLoad(() =>
      stack.restartPostgres(async () => {
        for (const p of payouts.slice(1)) await stack.pay(p.payout.pix_copy_paste);
      }),
    );
    for (const p of payouts) await expectPayoutInvariants(stack, track(p, true));
    // The apis lived through it: a checked-out client losing its connection used to end the process
    // (ECONNREFUSED afterwards).
    expect([mainApi.process.running, treasuryApi.process.running]).toEqual([true, true]);
  }, 150_000);

  it('PostgreSQL SIGKILLed (postmaster and backends; crash recovery) with payouts in flight, paid while it is down', async () => {
    const payouts = await Promise.all([create(), create(), create()]);
    await stack.pay(payouts[0]!.payout.pix_copy_paste);
    // Killed while the first payout's settlement is under way (its webhooks, its read-model writes).
    await until('a settlement request for the first payout', async () =>
      (stack.provider.settlementRequests().get(payouts[0]!.payout.id) ?? 0) > 0 ? true : undefined,
    );
    await underLoad(() =>
      stack.restartPostgres(async () => {
        for (const p of payouts.slice(1)) await stack.pay(p.payout.pix_copy_paste);
      }, 'SIGKILL'),
    );
    for (const p of payouts) await expectPayoutInvariants(stack, track(p, true));
    // The apis lived through it (a checked-out client losing its connection used to end the process).
    expect([mainApi.process.running, treasuryApi.process.running]).toEqual([true, true]);
  }, 150_000);

  it('provider unreachable for a while, then back: the events fetched late are applied', async () => {
    const payouts = await Promise.all([create(), create()]);
    await stack.provider.takeDown();
    const { rows: before } = await stack.db.query<{ n: number }>(
      'SELECT count(*)::int AS n FROM webhook_tokens',
    );
    for (const p of payouts) await stack.pay(p.payout.pix_copy_paste);
    // The webhooks arrive (the tokens are recorded) but their events cannot be fetched yet.
    await until('both webhook tokens recorded while the provider is down', async () => {
      const { rows } = await stack.db.query<{ n: number }>('SELECT count(*)::int AS n FROM webhook_tokens');
      return rows[0]!.n >= before[0]!.n + 2 ? true : undefined;
    });
    for (const p of payouts) expect(await readModelStatus(p.payout.id)).toBe('PENDING');
    await stack.provider.bringBack();
    for (const p of payouts) await expectPayoutInvariants(stack, track(p, true));
  }, 150_000);

  it('a paid payout whose settlement fails ends FAILED with no transfer (and a refund case)', async () => {
    const p = await create();
    await stack.pay(p.payout.pix_copy_paste, 'settlement_failed');
    await expectPayoutInvariants(stack, track(p, true, 'FAILED', 'provider_reported_failure'));
  }, 120_000);
});
