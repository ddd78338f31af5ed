import { connect, createServer, type Server, type Socket } from 'node:net';
import { generatePrivateKey, privateKeyToAddress } from 'viem/accounts';
import { countTransfersTo } from '../../src/adapters/chain/usdt-ledger';
import { freePort } from '../../dev/local/infra/ports';
import { postPayout, startStack, VALID_PAYOUT, type TestStack } from '../support/stack';

/**
 * The service reaches the provider through this TCP relay, which the test can take down (nothing
 * listens: connection refused, open connections cut) and bring back on the same port. The provider
 * itself keeps running, so its notifications are still there when the service can reach it again.
 */
class ProviderLink {
  private server: Server | undefined;
  private readonly sockets = new Set<Socket>();
  target = 0;

  constructor(readonly port: number) {}

  async up(): Promise<void> {
    this.server = createServer((client) => {
      const upstream = connect(this.target, '127.0.0.1');
      for (const s of [client, upstream]) {
        this.sockets.add(s);
        s.on('close', () => this.sockets.delete(s));
        s.on('error', () => {});
      }
      client.pipe(upstream).pipe(client);
    });
    await new Promise<void>((resolve) => this.server!.listen(this.port, '127.0.0.1', resolve));
  }

  async down(): Promise<void> {
    const closed = new Promise((resolve) => this.server?.close(resolve));
    for (const s of this.sockets) s.destroy();
    await closed;
    this.server = undefined;
  }
}

// docs/decisions.md D21: a provider outage loses nothing. The payment webhook arrives while the
// provider's notification endpoint is unreachable; the event is fetched and applied once it is back.
describe('provider outage while a webhook is processed (real servers)', () => {
  let stack: TestStack;
  let link: ProviderLink;
  let apiKey: string;

  beforeAll(async () => {
    link = new ProviderLink(await freePort());
    await link.up();
    stack = await startStack({ env: { PROVIDER_API_URL: `http://127.0.0.1:${link.port}` } });
    link.target = Number(new URL(stack.sandboxUrl).port);
    ({ apiKey } = await stack.createPartner());
  }, 120_000);
  afterAll(async () => {
    await stack?.close();
    await link?.down();
  });

  it('keeps retrying the fetch and applies the event once the provider is reachable again', async () => {
    const receiver = privateKeyToAddress(generatePrivateKey());
    const created = await postPayout(stack.apiUrl, apiKey, { ...VALID_PAYOUT, receiver_wallet: receiver });
    expect(created.status).toBe(201);
    const payoutId = created.body.id as string;

    await link.down();
    await stack.pay(created.body.pix_copy_paste as string); // the payer's bank is not behind the link

    // The webhook was acknowledged and its workflow is retrying the fetch. The fetch is a local
    // activity: after its first quick retry, each retry waits on a durable timer in the workflow's
    // history, so two backoff timers mean at least three failed attempts.
    const query = `WorkflowType = 'providerEventWorkflow' AND TaskQueue = '${stack.config.TEMPORAL_TASK_QUEUE}'`;
    let backoffs = 0;
    let running = false;
    for (let i = 0; i < 200 && backoffs < 2; i++) {
      for await (const wf of stack.temporal.workflow.list({ query })) {
        const handle = stack.temporal.workflow.getHandle(wf.workflowId);
        running = (await handle.describe()).status.name === 'RUNNING';
        const { events } = await handle.fetchHistory();
        backoffs = (events ?? []).filter((e) => e.timerStartedEventAttributes).length;
      }
      await new Promise((r) => setTimeout(r, 100));
    }
    expect(backoffs).toBeGreaterThanOrEqual(2);
    expect(running).toBe(true);
    const during = await fetch(`${stack.apiUrl}/v1/payouts/${payoutId}`, {
      headers: { 'x-api-key': apiKey },
    });
    expect(((await during.json()) as { status: string }).status).toBe('PENDING');

    await link.up();
    const done = await stack.waitForStatus(apiKey, payoutId, ['COMPLETED', 'FAILED'], 40_000);
    expect(done.status).toBe('COMPLETED');
    const transfers = await countTransfersTo({
      rpcUrl: stack.rpcUrl,
      usdtAddress: stack.usdtAddress,
      to: receiver,
    });
    expect(transfers.count).toBe(1);
    expect(transfers.txHashes).toEqual([done.blockchain_tx_id]);
  }, 60_000);
});
