/** The provider contract against today's provider API: the HTTP client and the provider sandbox. */
import { createHttpProvider } from '../../src/adapters/provider/http-provider';
import { buildSandboxApp } from '../../dev/sandbox/app';
import { loadSandboxConfig } from '../../dev/sandbox/config';
import { startWebhookReceiver } from '../sandbox/support';
import { describeProviderContract, type FaultyOperation } from './contract';

const API_KEY = 'sandbox-contract-key-0123456789';

/** The sandbox's fault routes for each operation of the client. */
const FAULT_ROUTES: Record<FaultyOperation, string> = {
  createCharge: 'POST /pix/charges',
  getChargeStatus: 'GET /pix/charges/{charge_id}',
  cancelCharge: 'PATCH /pix/charges/{charge_id}',
  fetchNotification: 'GET /pix/notification/{token}',
};

describeProviderContract('provider-api', async () => {
  const receiver = await startWebhookReceiver();
  const sandbox = buildSandboxApp(
    loadSandboxConfig({
      SANDBOX_PORT: '0',
      SANDBOX_WEBHOOK_URL: receiver.url,
      SANDBOX_API_KEY: API_KEY,
      SANDBOX_LOG_LEVEL: 'silent',
    }),
    { returnDelayMs: 100 },
  );
  const baseUrl = await sandbox.listen({ host: '127.0.0.1', port: 0 });
  const post = (path: string, body: unknown) =>
    fetch(`${baseUrl}${path}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
  const client = createHttpProvider({ baseUrl, apiKey: API_KEY, timeoutMs: 5_000 });
  return {
    collection: client,
    returns: {
      client,
      async payerReturns() {
        const body = (await (await fetch(`${baseUrl}/sandbox/returns`)).json()) as {
          returns: { end_to_end_id: string; devolucao_id: string }[];
        };
        return body.returns.map((r) => ({ eventId: r.end_to_end_id, refundId: r.devolucao_id }));
      },
      async refuseNext(count) {
        const res = await post('/sandbox/returns/refuse', { count });
        if (!res.ok) throw new Error(`refusal not armed: HTTP ${res.status}`);
      },
    },
    pay: (pixCopyPaste) => post('/sandbox/payments', { pix_copy_paste: pixCopyPaste }),
    nextWebhookToken: () => receiver.takeToken(),
    async failNext(operation, status) {
      const res = await post('/sandbox/faults', { route: FAULT_ROUTES[operation], status, count: 1 });
      if (!res.ok) throw new Error(`fault not injected: HTTP ${res.status}`);
    },
    async close() {
      await sandbox.close();
      await receiver.close();
    },
  };
});
