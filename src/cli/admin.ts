import { randomBytes } from 'node:crypto';
import { parseArgs } from 'node:util';
import { runMigrations } from '../adapters/db/migrate';
import {
  createPartner,
  listPartners,
  rotateApiKey,
  setPartnerCallback,
  setPartnerStatus,
} from '../adapters/db/partners-repo';
import { createPool, type Db } from '../adapters/db/pool';
import { loadConfig } from '../config';

/**
 * Admin CLI for the operator's account managers. Prints JSON on stdout (one object per command),
 * errors on stderr with exit code 1 (usage errors: 2). Talks to DATABASE_URL (default: the local
 * stack of `npm start`).
 */

const HELP: Record<string, string> = {
  '': `usage: npm run --silent admin -- <command> [options]

commands:
  partner create --name <name>                      create a partner and issue its API key (shown once)
  partner list                                      list partners
  partner rotate-key --id <partner_id>              revoke the partner's keys and issue a new one (shown once)
  partner disable --id <partner_id>                 refuse the partner's keys from now on
  partner enable --id <partner_id>                  accept the partner's keys again
  partner set-callback --id <partner_id> --url <https url> [--secret <secret>]
                                                    set the callback URL (a secret is generated if not given)
  partner clear-callback --id <partner_id>          stop sending callbacks to the partner

Every command takes --help. Environment: DATABASE_URL.`,
  'partner create': 'usage: partner create --name <name>\nCreates a partner; prints {"partner_id", "api_key"}. The key is shown only this once.',
  'partner list': 'usage: partner list\nPrints {"partners": [...]}.',
  'partner rotate-key': 'usage: partner rotate-key --id <partner_id>\nRevokes every key of the partner and prints the new {"partner_id", "api_key"}.',
  'partner disable': 'usage: partner disable --id <partner_id>\nRequests with the partner\'s keys get 401 from now on.',
  'partner enable': 'usage: partner enable --id <partner_id>\nRe-enables a disabled partner.',
  'partner set-callback':
    'usage: partner set-callback --id <partner_id> --url <url> [--secret <secret>]\nPrints {"partner_id", "callback_url", "callback_secret"}; the secret signs X-Payout-Signature.',
  'partner clear-callback': 'usage: partner clear-callback --id <partner_id>',
};

class UsageError extends Error {}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

function requireOption(values: Record<string, unknown>, name: string, command: string): string {
  const value = values[name];
  if (typeof value !== 'string' || value.trim() === '') throw new UsageError(`--${name} is required\n\n${HELP[command]}`);
  return value.trim();
}

function requirePartnerId(values: Record<string, unknown>, command: string): string {
  const id = requireOption(values, 'id', command);
  if (!UUID.test(id)) throw new UsageError(`--id must be a partner id (a UUID)`);
  return id;
}

async function run(command: string, values: Record<string, unknown>, db: Db): Promise<unknown> {
  switch (command) {
    case 'partner create': {
      const name = requireOption(values, 'name', command);
      if (name.length > 200) throw new UsageError('--name must be at most 200 characters');
      const { partner, apiKey } = await createPartner(db, name);
      return { partner_id: partner.id, api_key: apiKey };
    }
    case 'partner list':
      return {
        partners: (await listPartners(db)).map((p) => ({
          partner_id: p.id,
          name: p.name,
          status: p.status,
          callback_url: p.callbackUrl,
          created_at: p.createdAt,
        })),
      };
    case 'partner rotate-key': {
      const id = requirePartnerId(values, command);
      const apiKey = await rotateApiKey(db, id);
      if (!apiKey) throw new Error(`no partner ${id}`);
      return { partner_id: id, api_key: apiKey };
    }
    case 'partner disable':
    case 'partner enable': {
      const id = requirePartnerId(values, command);
      const status = command === 'partner disable' ? 'disabled' : 'active';
      if (!(await setPartnerStatus(db, id, status))) throw new Error(`no partner ${id}`);
      return { partner_id: id, status };
    }
    case 'partner set-callback': {
      const id = requirePartnerId(values, command);
      const url = requireOption(values, 'url', command);
      if (!URL.canParse(url) || !/^https?:$/.test(new URL(url).protocol)) throw new UsageError('--url must be an http(s) URL');
      const secret = typeof values.secret === 'string' && values.secret ? values.secret : `whsec_${randomBytes(24).toString('base64url')}`;
      if (!(await setPartnerCallback(db, id, { url, secret }))) throw new Error(`no partner ${id}`);
      return { partner_id: id, callback_url: url, callback_secret: secret };
    }
    case 'partner clear-callback': {
      const id = requirePartnerId(values, command);
      if (!(await setPartnerCallback(db, id, null))) throw new Error(`no partner ${id}`);
      return { partner_id: id, callback_url: null };
    }
    default:
      throw new UsageError(`unknown command "${command}"\n\n${HELP['']}`);
  }
}

async function main(argv: string[]): Promise<number> {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    strict: true,
    options: {
      help: { type: 'boolean', short: 'h' },
      name: { type: 'string' },
      id: { type: 'string' },
      url: { type: 'string' },
      secret: { type: 'string' },
    },
  });
  const command = positionals.join(' ');
  if (values.help || command === '') {
    const help = HELP[command];
    if (help === undefined) throw new UsageError(`unknown command "${command}"\n\n${HELP['']}`);
    process.stdout.write(`${help}\n`);
    return 0;
  }
  if (!(command in HELP)) throw new UsageError(`unknown command "${command}"\n\n${HELP['']}`);

  const config = loadConfig();
  await runMigrations(config.DATABASE_URL);
  const db = createPool(config.DATABASE_URL, 2);
  try {
    const result = await run(command, values, db);
    process.stdout.write(`${JSON.stringify(result, null, 2)}\n`);
    return 0;
  } finally {
    await db.end();
  }
}

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (err: unknown) => {
    const usage = err instanceof UsageError || (err as { code?: string })?.code?.startsWith('ERR_PARSE_ARGS');
    process.stderr.write(`error: ${err instanceof Error ? err.message : String(err)}\n`);
    if ((err as { code?: string })?.code === 'ECONNREFUSED') {
      process.stderr.write('is the database up? start the stack with `npm start`, or set DATABASE_URL\n');
    }
    process.exit(usage ? 2 : 1);
  },
);
