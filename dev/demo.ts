import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import qrcode from 'qrcode-terminal';
import { generatePrivateKey, privateKeyToAddress } from 'viem/accounts';
import { loadApiConfig } from '../src/config';
import { payoutWorkflowId } from '../src/workflows/payout.contract';

/**
 * `npm run demo`: one payout through the running local stack (`npm start`), as a partner and a
 * payer would see it. Previews the quote, creates the payout, shows its PIX code (and QR code, also
 * served as an image), pays it at the sandbox's bank, follows it until COMPLETED with the explorer
 * link, and lists the partner's latest payouts. Exits 1 if it does not complete.
 *
 * Environment (all optional): DEMO_API_URL, DEMO_SANDBOX_URL, DEMO_TEMPORAL_UI_URL, DEMO_API_KEY
 * (else the demo partner of .data/demo-partner.json), DEMO_AMOUNT_BRL, DEMO_TIMEOUT_SECONDS.
 */

const API_URL = process.env.DEMO_API_URL ?? 'http://127.0.0.1:3000';
const SANDBOX_URL = process.env.DEMO_SANDBOX_URL ?? 'http://127.0.0.1:4000';
const TEMPORAL_UI_URL = process.env.DEMO_TEMPORAL_UI_URL ?? 'http://127.0.0.1:8233';
// The service's namespace, as the api and worker read it.
const TEMPORAL_NAMESPACE = loadApiConfig().TEMPORAL_NAMESPACE;
const AMOUNT_BRL = Number(process.env.DEMO_AMOUNT_BRL ?? '100.00');
const TIMEOUT_MS = Number(process.env.DEMO_TIMEOUT_SECONDS ?? '120') * 1000;
const POLL_MS = 500; // partners are asked to poll every 10 s; a demo wants to show each status

interface Payout {
  id: string;
  created_at: string;
  partner_id: string;
  status: 'PENDING' | 'PROCESSING' | 'COMPLETED' | 'FAILED';
  amount_brl: number;
  min_amount_usdt: number;
  settled_amount_usdt: number;
  receiver_wallet: string;
  pix_copy_paste: string;
  blockchain_network: string;
  blockchain_tx_id: string;
  block_explorer_url: string;
  paid_at?: string;
  confirmed_at?: string;
}

class DemoError extends Error {}

const started = Date.now();
const elapsed = () => `${((Date.now() - started) / 1000).toFixed(1).padStart(5)}s`;
const step = (text: string) => process.stdout.write(`\n\x1b[1m${text}\x1b[0m\n`);
const line = (text = '') => process.stdout.write(`  ${text}\n`);

function apiKey(): string {
  if (process.env.DEMO_API_KEY) return process.env.DEMO_API_KEY;
  const file = path.resolve(__dirname, '..', '.data', 'demo-partner.json');
  if (!existsSync(file)) {
    throw new DemoError(
      `no API key: start the stack with \`npm start\` (it writes ${file}) or set DEMO_API_KEY`,
    );
  }
  return (JSON.parse(readFileSync(file, 'utf8')) as { api_key: string }).api_key;
}

async function call(url: string, init: RequestInit = {}): Promise<Response> {
  try {
    return await fetch(url, { ...init, signal: AbortSignal.timeout(30_000) });
  } catch (err) {
    throw new DemoError(`cannot reach ${new URL(url).origin} (${String(err)}): is \`npm start\` running?`);
  }
}

async function main(): Promise<void> {
  const key = apiKey();
  const ready = await call(`${API_URL}/readyz`);
  if (!ready.ok) throw new DemoError(`the api at ${API_URL} is not ready: ${await ready.text()}`);

  step('1. Partner previews the quote (not binding)');
  line(`GET ${API_URL}/v1/quotes?amount_brl=${AMOUNT_BRL}`);
  const quoteRes = await call(`${API_URL}/v1/quotes?amount_brl=${AMOUNT_BRL}`, {
    headers: { 'x-api-key': key },
  });
  const preview = (await quoteRes.json()) as { min_amount_usdt: number; expires_at: string; error?: string };
  if (quoteRes.status !== 200) throw new DemoError(`quote answered ${quoteRes.status}: ${preview.error}`);
  line(
    `${AMOUNT_BRL.toFixed(2)} BRL would guarantee at least ${preview.min_amount_usdt} USDT (rate held until ${preview.expires_at})`,
  );

  step('2. Partner creates a payout');
  // A wallet nobody has used, so the explorer link and the balance are this payout's alone.
  const receiver = privateKeyToAddress(generatePrivateKey());
  const body = {
    amount_brl: AMOUNT_BRL,
    receiver_wallet: receiver,
    pix_key: 'payer@example.com',
    pix_key_type: 'EMAIL',
  };
  line(`POST ${API_URL}/v1/payouts ${JSON.stringify(body)}`);
  const res = await call(`${API_URL}/v1/payouts`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-api-key': key },
    body: JSON.stringify(body),
  });
  const created = (await res.json()) as Payout & { error?: string };
  if (res.status !== 201)
    throw new DemoError(`POST answered ${res.status}: ${created.error ?? JSON.stringify(created)}`);
  line(`201 Created  (X-Request-Id ${res.headers.get('x-request-id')})`);
  line(`payout ${created.id}: ${created.status}, ${created.amount_brl.toFixed(2)} BRL,`);
  line(`guaranteed at least ${created.min_amount_usdt} USDT to ${created.receiver_wallet}`);

  step('3. The payer gets the PIX charge (copy and paste, or scan)');
  line(created.pix_copy_paste);
  const qr = await new Promise<string>((resolve) =>
    qrcode.generate(created.pix_copy_paste, { small: true }, resolve),
  );
  process.stdout.write(`${qr.replace(/^/gm, '  ')}\n`);
  // The same code as an image, for a partner's checkout page (needs the API key: fetch it server-side).
  const image = await call(`${API_URL}/v1/payouts/${created.id}/qr.png`, { headers: { 'x-api-key': key } });
  const bytes = (await image.arrayBuffer()).byteLength;
  if (image.status !== 200) throw new DemoError(`GET qr.png answered ${image.status}`);
  line(`also as an image: GET ${API_URL}/v1/payouts/${created.id}/qr.png (or qr.svg): ${bytes} bytes`);

  step('4. The payer pays it (sandbox bank)');
  const paid = await call(`${SANDBOX_URL}/sandbox/payments`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ pix_copy_paste: created.pix_copy_paste }),
  });
  if (paid.status !== 202)
    throw new DemoError(`the sandbox refused the payment: ${paid.status} ${await paid.text()}`);
  line('202 Accepted: the provider will notify the service by webhook');

  step('5. Partner polls GET /v1/payouts/{id}');
  const final = await follow(created.id, key);
  const workflowUrl = `${TEMPORAL_UI_URL}/namespaces/${TEMPORAL_NAMESPACE}/workflows/${encodeURIComponent(payoutWorkflowId(final.id))}`;
  if (final.status !== 'COMPLETED') {
    line(`Temporal workflow: ${workflowUrl}`);
    throw new DemoError(`payout ended ${final.status}`);
  }

  step('Done: USDT settled');
  line(`settled       ${final.settled_amount_usdt} USDT (guaranteed minimum ${final.min_amount_usdt})`);
  line(`network       ${final.blockchain_network}`);
  line(`transaction   ${final.blockchain_tx_id}`);
  line(`explorer      ${final.block_explorer_url}`);
  line(`  (the local chain is anvil: the link shows what a partner gets on Arbitrum One)`);
  line(`paid at       ${final.paid_at}, confirmed at ${final.confirmed_at}`);
  line(`workflow      ${workflowUrl}`);
  line(
    `all payouts   ${TEMPORAL_UI_URL}/namespaces/${TEMPORAL_NAMESPACE}/workflows?query=${encodeURIComponent(`PartnerId="${final.partner_id}"`)}`,
  );

  step('6. A second payout the payer will not pay: the partner cancels it (POST /v1/payouts/{id}/cancel)');
  const second = await call(`${API_URL}/v1/payouts`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-api-key': key },
    body: JSON.stringify(body),
  });
  const unwanted = (await second.json()) as Payout & { error?: string };
  if (second.status !== 201)
    throw new DemoError(`POST answered ${second.status}: ${unwanted.error ?? JSON.stringify(unwanted)}`);
  const cancel = await call(`${API_URL}/v1/payouts/${unwanted.id}/cancel`, {
    method: 'POST',
    headers: { 'x-api-key': key },
  });
  const cancelled = (await cancel.json()) as Payout & { error?: string };
  if (cancel.status !== 200)
    throw new DemoError(`cancel answered ${cancel.status}: ${cancelled.error ?? JSON.stringify(cancelled)}`);
  line(`payout ${cancelled.id}: ${cancelled.status}; its PIX charge was removed at the provider`);

  step('7. Partner lists its latest payouts (GET /v1/payouts; page on with starting_after=<last id>)');
  const listed = await call(`${API_URL}/v1/payouts?limit=5`, { headers: { 'x-api-key': key } });
  const page = (await listed.json()) as { data: Payout[]; has_more: boolean };
  if (listed.status !== 200) throw new DemoError(`GET /v1/payouts answered ${listed.status}`);
  for (const p of page.data) {
    line(`${p.created_at}  ${p.id}  ${p.status.padEnd(10)} ${p.amount_brl.toFixed(2).padStart(10)} BRL`);
  }
  if (page.has_more) line('… has_more: true');
}

async function follow(id: string, key: string): Promise<Payout> {
  const deadline = Date.now() + TIMEOUT_MS;
  let last: Payout['status'] | undefined;
  for (;;) {
    const res = await call(`${API_URL}/v1/payouts/${id}`, { headers: { 'x-api-key': key } });
    if (res.status !== 200) throw new DemoError(`GET answered ${res.status}: ${await res.text()}`);
    const payout = (await res.json()) as Payout;
    if (payout.status !== last) {
      line(`${elapsed()}  ${payout.status.padEnd(10)} ${describe(payout)}`);
      last = payout.status;
    }
    if (payout.status === 'COMPLETED' || payout.status === 'FAILED') return payout;
    if (Date.now() > deadline) {
      throw new DemoError(`payout still ${payout.status} after ${TIMEOUT_MS / 1000}s (DEMO_TIMEOUT_SECONDS)`);
    }
    await new Promise((resolve) => setTimeout(resolve, POLL_MS));
  }
}

function describe(p: Payout): string {
  switch (p.status) {
    case 'PENDING':
      return 'PIX charge created, awaiting payment';
    case 'PROCESSING':
      return 'PIX payment received, USDT transfer under way';
    case 'COMPLETED':
      return `USDT settled: ${p.settled_amount_usdt}`;
    case 'FAILED':
      return 'payout could not be completed';
  }
}

main().then(
  () => process.exit(0),
  (err: unknown) => {
    process.stderr.write(
      `\n\x1b[31mdemo failed:\x1b[0m ${err instanceof Error ? err.message : String(err)}\n`,
    );
    process.exit(1);
  },
);
