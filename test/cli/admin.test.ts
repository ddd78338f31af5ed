import { payloadKeysOf } from '../../src/main/wiring';
import { execFile } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import path from 'node:path';
import { promisify } from 'node:util';
import { generateCallbackSecret } from '../../src/adapters/callbacks/signature';
import { findPartnerCallback } from '../../src/adapters/db/partners-repo';
import { createSecretBox } from '../../src/adapters/secrets/secret-box';
import { compiledEntry } from '../support/compiled';
import { useStack, VALID_PAYOUT } from '../support/stack';

// The admin CLI as the account manager runs it: a real process against the test PostgreSQL, and the
// keys it prints used against the real api.
const ROOT = path.resolve(__dirname, '../..');
const run = promisify(execFile);

interface CliResult {
  code: number;
  stdout: string;
  stderr: string;
}

/**
 * One run of the CLI as its own process: `node` on its compiled entry (test/support/compiled.ts, as
 * the image runs it), or `command` with `args` (npm, as the account manager types it).
 */
async function cli(
  args: string[],
  { command, env = {}, stdin = '' }: { command?: string; env?: Record<string, string>; stdin?: string } = {},
): Promise<CliResult> {
  const [file, argv] =
    command === undefined
      ? [process.execPath, [await compiledEntry('src/main/admin.ts'), ...args]]
      : [command, args];
  try {
    const running = run(file, argv, {
      cwd: ROOT,
      env: {
        PATH: process.env.PATH,
        HOME: process.env.HOME,
        DATABASE_URL: process.env.TEST_DATABASE_URL,
        ...env,
      },
      timeout: 30_000,
    });
    running.child.stdin?.end(stdin);
    const { stdout, stderr } = await running;
    return { code: 0, stdout, stderr };
  } catch (err) {
    const e = err as { code?: number; stdout?: string; stderr?: string };
    if (typeof e.code !== 'number') throw err;
    return { code: e.code, stdout: e.stdout ?? '', stderr: e.stderr ?? '' };
  }
}

/** Exit 0 and exactly one JSON object on stdout. */
function json(result: CliResult): Record<string, unknown> {
  expect({ code: result.code, stderr: result.stderr }).toEqual({ code: 0, stderr: '' });
  const parsed = JSON.parse(result.stdout) as unknown;
  expect(parsed).toEqual(expect.any(Object));
  expect(Array.isArray(parsed)).toBe(false);
  return parsed as Record<string, unknown>;
}

describe('admin CLI', () => {
  const stack = useStack();

  const postWith = (apiKey: string) =>
    fetch(`${stack.apiUrl}/v1/payouts`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-api-key': apiKey },
      body: JSON.stringify(VALID_PAYOUT),
    });

  async function create(
    name = `cli ${randomUUID().slice(0, 8)}`,
  ): Promise<{ partner_id: string; api_key: string }> {
    return json(await cli(['partner', 'create', '--name', name])) as { partner_id: string; api_key: string };
  }

  it('`npm run --silent admin -- partner create --name X` prints {"partner_id","api_key"}, and the key works', async () => {
    const result = await cli(
      ['run', '--silent', 'admin', '--', 'partner', 'create', '--name', 'Acme Pagamentos'],
      { command: 'npm' },
    );
    expect(result.code).toBe(0);
    const created = JSON.parse(result.stdout) as Record<string, string>;
    expect(Object.keys(created).sort()).toEqual(['api_key', 'partner_id']);
    expect(created.partner_id).toMatch(
      /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/,
    );
    expect(created.api_key).toMatch(/^pk_live_[A-Za-z0-9_-]{43}$/);

    const res = await postWith(created.api_key!);
    expect(res.status).toBe(201);
    expect(await res.json()).toMatchObject({ partner_id: created.partner_id });
  });

  it("reads only the settings a command uses: the worker's treasury mode without its key does not stop `partner create`", async () => {
    const created = json(
      await cli(['partner', 'create', '--name', 'treasury shell'], {
        env: { SETTLEMENT_MODE: 'treasury', EVM_RPC_URL: 'not a url', TEMPORAL_PROFILE: 'no-such-profile' },
      }),
    ) as { api_key: string };
    expect((await postWith(created.api_key)).status).toBe(201);
  });

  it('partner list shows partners with status and callback URL, never a key', async () => {
    const { partner_id, api_key } = await create('listed partner');
    const listed = json(await cli(['partner', 'list'])) as { partners: Record<string, unknown>[] };
    const mine = listed.partners.find((p) => p.partner_id === partner_id);
    expect(mine).toEqual({
      partner_id,
      name: 'listed partner',
      status: 'active',
      callback_url: null,
      created_at: expect.stringMatching(/Z$/),
    });
    expect(JSON.stringify(listed)).not.toContain(api_key);
  });

  it('partner rotate-key: the new key works, the old one is refused', async () => {
    const { partner_id, api_key: oldKey } = await create();
    const rotated = json(await cli(['partner', 'rotate-key', '--id', partner_id]));
    expect(Object.keys(rotated).sort()).toEqual(['api_key', 'partner_id', 'previous_keys_valid_until']);
    expect(rotated.partner_id).toBe(partner_id);
    expect(rotated.api_key).not.toBe(oldKey);
    expect(rotated.previous_keys_valid_until).toBeNull();

    expect((await postWith(rotated.api_key as string)).status).toBe(201);
    const refused = await postWith(oldKey);
    expect(refused.status).toBe(401);
    expect(await refused.json()).toEqual({ error: 'invalid API key' });
  });

  it('partner rotate-key --overlap: both keys work until the overlap ends, then only the new one', async () => {
    const { partner_id, api_key: oldKey } = await create();
    const rotated = json(await cli(['partner', 'rotate-key', '--id', partner_id, '--overlap', '3s']));
    const until = Date.parse(rotated.previous_keys_valid_until as string);
    expect(until).toBeGreaterThan(Date.now());
    expect(until).toBeLessThanOrEqual(Date.now() + 3_500);
    expect((await postWith(oldKey)).status).toBe(201);
    expect((await postWith(rotated.api_key as string)).status).toBe(201);

    await new Promise((resolve) => setTimeout(resolve, Math.max(0, until - Date.now()) + 200));
    const refused = await postWith(oldKey);
    expect(refused.status).toBe(401);
    expect(await refused.json()).toEqual({ error: 'invalid API key' });
    expect((await postWith(rotated.api_key as string)).status).toBe(201);
    // A later rotation never extends a key that is already ending.
    const again = json(await cli(['partner', 'rotate-key', '--id', partner_id, '--overlap', '1h']));
    expect((await postWith(oldKey)).status).toBe(401);
    expect((await postWith(rotated.api_key as string)).status).toBe(201);
    expect((await postWith(again.api_key as string)).status).toBe(201);
  });

  it('partner disable refuses the key; partner enable accepts it again', async () => {
    const { partner_id, api_key } = await create();
    expect(json(await cli(['partner', 'disable', '--id', partner_id]))).toEqual({
      partner_id,
      status: 'disabled',
    });
    const refused = await postWith(api_key);
    expect(refused.status).toBe(401);
    expect(await refused.json()).toEqual({ error: 'invalid API key' });
    const listed = json(await cli(['partner', 'list'])) as {
      partners: { partner_id: string; status: string }[];
    };
    expect(listed.partners.find((p) => p.partner_id === partner_id)?.status).toBe('disabled');

    expect(json(await cli(['partner', 'enable', '--id', partner_id]))).toEqual({
      partner_id,
      status: 'active',
    });
    expect((await postWith(api_key)).status).toBe(201);
  });

  it('partner set-callback stores the URL and a generated or stdin secret, encrypted; clear-callback removes them', async () => {
    const { partner_id } = await create();
    // The URL is vetted as the worker vets it before sending; a loopback one needs this flag.
    const env = {
      CALLBACK_ALLOW_PRIVATE_NETWORKS: 'true',
      PAYLOAD_ENCRYPTION_KEY: stack.config.PAYLOAD_ENCRYPTION_KEY!,
    };
    const secrets = createSecretBox(payloadKeysOf(stack.config));
    const stored = async () =>
      (
        await stack.db.query<{ callback_url: string; callback_secret: string }>(
          'SELECT callback_url, callback_secret FROM partners WHERE id = $1',
          [partner_id],
        )
      ).rows[0]!;
    const setCallback = (extra: string[], stdin?: string) =>
      cli(['partner', 'set-callback', '--id', partner_id, ...extra], { env, stdin });

    const generated = json(await setCallback(['--url', 'http://127.0.0.1:8080/hooks']));
    expect(generated).toEqual({
      partner_id,
      callback_url: 'http://127.0.0.1:8080/hooks',
      callback_secret: expect.stringMatching(/^whsec_[A-Za-z0-9+/]{43}=$/),
    });
    const atRest = await stored();
    expect(atRest.callback_secret).toMatch(/^enc:v1:/);
    expect(atRest.callback_secret).not.toContain((generated.callback_secret as string).slice(6));
    expect(secrets.open(atRest.callback_secret, partner_id)).toBe(generated.callback_secret);

    const given = generateCallbackSecret();
    const fromStdin = json(
      await setCallback(['--url', 'http://127.0.0.1:8080/v2', '--secret-stdin'], `${given}\n`),
    );
    expect(fromStdin).toEqual({ partner_id, callback_url: 'http://127.0.0.1:8080/v2' });
    expect(await findPartnerCallback(stack.db, partner_id, secrets)).toEqual({
      url: 'http://127.0.0.1:8080/v2',
      secret: given,
    });

    // Never from argv (ps and shell history keep it), and never a secret that is not whsec_ + base64.
    const argv = await setCallback(['--url', 'http://127.0.0.1:8080/v3', '--secret', given]);
    expect(argv.code).toBe(2);
    const bad = await setCallback(['--url', 'http://127.0.0.1:8080/v3', '--secret-stdin'], 'hunter2\n');
    expect(bad).toMatchObject({ code: 2, stderr: expect.stringContaining('must start with whsec_') });
    expect((await stored()).callback_url).toBe('http://127.0.0.1:8080/v2');

    expect(json(await cli(['partner', 'clear-callback', '--id', partner_id]))).toEqual({
      partner_id,
      callback_url: null,
    });
    const after = await stack.db.query('SELECT callback_url, callback_secret FROM partners WHERE id = $1', [
      partner_id,
    ]);
    expect(after.rows[0]).toEqual({ callback_url: null, callback_secret: null });
  });

  // Each of these is a process of its own that needs nothing of the stack: they run side by side.
  it.concurrent.each([[[]], [['--help']], [['-h']], [['partner', '--help']]])(
    '%j prints the overview listing every command',
    async (args) => {
      const result = await cli(args);
      const out = args.length === 0 ? result.stderr : result.stdout;
      expect(result.code).toBe(args.length === 0 ? 2 : 0);
      for (const command of [
        'create',
        'list',
        'rotate-key',
        'rotate-callback-secret',
        'disable',
        'enable',
        'set-callback',
        'clear-callback',
      ]) {
        expect(out).toContain(`partner ${command}`);
      }
    },
  );

  it.concurrent.each([
    'create',
    'list',
    'rotate-key',
    'rotate-callback-secret',
    'disable',
    'enable',
    'set-callback',
    'clear-callback',
  ])('partner %s --help prints its usage and exits 0 without touching the database', async (command) => {
    const result = await cli(['partner', command, '--help']);
    expect(result.code).toBe(0);
    expect(result.stdout).toMatch(new RegExp(`^usage: npm run --silent admin -- partner ${command}\\b`));
  });

  it.concurrent.each([
    [['partner', 'create'], /--name is required/],
    [['partner', 'create', '--name', '   '], /--name is required/],
    [['partner', 'create', '--name', 'x'.repeat(201)], /--name must be at most 200 characters/],
    [['partner', 'rotate-key'], /--id is required/],
    [
      ['partner', 'rotate-key', '--id', '00000000-0000-4000-8000-000000000000', '--overlap', '31d'],
      /--overlap: overlap must be at most 30d/,
    ],
    [
      ['partner', 'rotate-key', '--id', '00000000-0000-4000-8000-000000000000', '--overlap', '24'],
      /--overlap: overlap must be 0 or/,
    ],
    [['partner', 'disable', '--id', 'not-a-uuid'], /--id must be a partner id \(a UUID\)/],
    [['partner', 'set-callback', '--id', randomUUID()], /--url is required/],
    [['partner', 'set-callback', '--id', randomUUID(), '--url', 'ftp://x'], /--url must be an http\(s\) URL/],
    [
      ['partner', 'set-callback', '--id', randomUUID(), '--url', 'not a url'],
      /--url must be an http\(s\) URL/,
    ],
    [['partner', 'list', '--name', 'x'], /Unknown option '--name'/],
    [['partner', 'create', '--name', 'x', 'extra'], /unexpected argument|positional/i],
    [['partner', 'frobnicate'], /unknown command "partner frobnicate"/],
    [['partners', 'list'], /unknown command "partners list"/],
  ])('usage error %j -> exit 2 with a message on stderr', async (args, message) => {
    const result = await cli(args);
    expect(result.code).toBe(2);
    expect(result.stdout).toBe('');
    expect(result.stderr).toMatch(message);
  });

  it.concurrent.each(['rotate-key', 'disable', 'enable', 'clear-callback'])(
    'partner %s with an unknown partner id -> exit 1 "no partner <id>"',
    async (command) => {
      const id = randomUUID();
      const result = await cli(['partner', command, '--id', id]);
      expect(result.code).toBe(1);
      expect(result.stdout).toBe('');
      expect(result.stderr).toBe(`error: no partner ${id}\n`);
    },
  );

  it('`refunds list` shows open refund cases; `refunds resolve` closes one with a note, once', async () => {
    // A refund case as the worker opens one (a payment of the wrong amount on a payout).
    const eventId = `evt_${randomUUID().replace(/-/g, '').slice(0, 22)}`;
    const payoutId = randomUUID();
    await stack.db.query(
      `INSERT INTO refund_cases (event_id, payout_id, charge_id, amount_brl, reason)
       VALUES ($1, $2, 'chg_cli', '1.00', 'paid 1.00 BRL on a charge of 100.00 BRL')`,
      [eventId, payoutId],
    );
    const listed = json(await cli(['refunds', 'list'])) as { refund_cases: Record<string, unknown>[] };
    const open = listed.refund_cases.find((c) => c.event_id === eventId);
    expect(open).toMatchObject({
      id: expect.stringMatching(/^[0-9a-f-]{36}$/),
      payout_id: payoutId,
      amount_brl: '1.00',
      status: 'open',
      resolved_at: null,
      resolution_note: null,
    });

    const id = open!.id as string;
    const resolved = json(
      await cli(['refunds', 'resolve', '--id', id, '--note', 'returned by PIX, e2e E123']),
    );
    expect(resolved).toMatchObject({ id, status: 'resolved', resolution_note: 'returned by PIX, e2e E123' });
    expect(resolved.resolved_at).toEqual(expect.any(String));
    // Resolving again keeps the first resolution.
    const again = json(await cli(['refunds', 'resolve', '--id', id, '--note', 'other']));
    expect(again).toMatchObject({ resolution_note: 'returned by PIX, e2e E123' });

    const after = json(await cli(['refunds', 'list'])) as { refund_cases: { id: string }[] };
    expect(after.refund_cases.map((c) => c.id)).not.toContain(id);
    const all = json(await cli(['refunds', 'list', '--all'])) as { refund_cases: { id: string }[] };
    expect(all.refund_cases.map((c) => c.id)).toContain(id);

    const unknown = await cli(['refunds', 'resolve', '--id', randomUUID(), '--note', 'x']);
    expect(unknown.code).toBe(1);
    const usage = await cli(['refunds', 'resolve', '--id', id]);
    expect(usage).toMatchObject({ code: 2, stderr: expect.stringContaining('--note is required') });
  }, 60_000);

  it('an unreachable database -> exit 1 with a hint', async () => {
    const result = await cli(['partner', 'list'], {
      env: { DATABASE_URL: 'postgres://postgres:x@127.0.0.1:1/none' },
    });
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(/ECONNREFUSED[\s\S]*is the database up\?/);
  });
});
