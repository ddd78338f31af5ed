import {
  CallbackOverlapActive,
  NoCallbackConfigured,
  rotateApiKey,
  rotateCallbackSecret,
} from '../adapters/db/credential-rotation';
import { CallbackUrlRefused, vetCallbackUrl } from '../adapters/callbacks/url-guard';
import { callbackSecretProblem, generateCallbackSecret } from '../adapters/callbacks/signature';
import { callbackEventAnswer, listCallbackEvents } from '../adapters/db/callbacks-repo';
import {
  createPartner,
  listPartners,
  setPartnerCallback,
  setPartnerStatus,
} from '../adapters/db/partners-repo';
import { isUuid } from '../domain/ids';
import { OverlapError, parseOverlap } from '../domain/rotation';
import { countOption, requireOption, str, UsageError, type Commands, type Values } from './command';

/** `partner …`: partners, their API keys, their callback URL and secret, and its deliveries. */

function requirePartnerId(values: Values): string {
  const id = requireOption(values, 'id');
  if (!isUuid(id)) throw new UsageError('--id must be a partner id (a UUID)');
  return id.toLowerCase();
}

/** A partner id that matched no row is an operator mistake, not a bug: exit 1 with a plain message. */
function found<T>(result: T | null | false, id: string): T {
  if (result === null || result === false) throw new Error(`no partner ${id}`);
  return result;
}

/** --overlap in seconds (0 when absent): how long a replaced credential stays valid. */
function overlapOption(values: Record<string, unknown>): number {
  if (values.overlap === undefined) return 0;
  try {
    return parseOverlap(String(values.overlap));
  } catch (err) {
    if (err instanceof OverlapError) throw new UsageError(`--overlap: ${err.message}`);
    throw err;
  }
}

/** The first line of stdin, checked as a Standard Webhooks secret (whsec_ + base64). */
async function readSecretFromStdin(): Promise<string> {
  if (process.stdin.isTTY) process.stderr.write('callback secret (whsec_...): ');
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) {
    chunks.push(chunk as Buffer);
    if (Buffer.concat(chunks).includes(0x0a)) break;
  }
  const secret = Buffer.concat(chunks).toString('utf8').split(/\r?\n/)[0]!.trim();
  if (!secret) throw new UsageError('--secret-stdin: no secret on stdin');
  const problem = callbackSecretProblem(secret);
  if (problem) throw new UsageError(`--secret-stdin: the secret ${problem}`);
  return secret;
}

export const PARTNER_COMMANDS: Commands = {
  'partner create': {
    args: '--name <name>',
    summary: 'create a partner and issue its API key (shown once)',
    details: 'Prints {"partner_id", "api_key"}. Only a hash of the key is stored: it cannot be shown again.',
    options: { name: str },
    plan(values) {
      const name = requireOption(values, 'name');
      if (name.length > 200) throw new UsageError('--name must be at most 200 characters');
      return async (db) => {
        const { partner, apiKey } = await createPartner(db, name);
        return { partner_id: partner.id, api_key: apiKey };
      };
    },
  },
  'partner list': {
    args: '',
    summary: 'list partners',
    details: 'Prints {"partners": [{"partner_id", "name", "status", "callback_url", "created_at"}]}.',
    options: {},
    plan: () => async (db) => ({
      partners: (await listPartners(db)).map((p) => ({
        partner_id: p.id,
        name: p.name,
        status: p.status,
        callback_url: p.callbackUrl,
        created_at: p.createdAt,
      })),
    }),
  },
  'partner rotate-key': {
    args: '--id <partner_id> [--overlap <duration>]',
    summary: 'issue a new API key (shown once); the old ones end now, or after --overlap',
    details:
      'Prints {"partner_id", "api_key", "previous_keys_valid_until"}. With --overlap (e.g. 24h, 7d,\n' +
      'at most 30d) the old keys keep working beside the new one until that instant, then are\n' +
      'refused with nothing more to run; without it they are refused from now on.',
    options: { id: str, overlap: str },
    plan(values) {
      const id = requirePartnerId(values);
      const overlap = overlapOption(values);
      return async (db) => {
        const rotation = found(await rotateApiKey(db, id, overlap), id);
        return {
          partner_id: id,
          api_key: rotation.issued,
          previous_keys_valid_until: rotation.previousValidUntil,
        };
      };
    },
  },
  'partner rotate-callback-secret': {
    args: '--id <partner_id> [--overlap <duration>] [--secret-stdin]',
    summary: 'replace the callback signing secret; both sign callbacks during --overlap',
    details:
      'Prints {"partner_id", "callback_secret", "previous_secret_valid_until"} ("callback_secret"\n' +
      'only when generated; --secret-stdin reads a whsec_ secret from stdin instead). During the\n' +
      'overlap (e.g. 24h, at most 30d) every callback carries a signature by each secret, so the\n' +
      'partner switches its receiver to the new one at any moment in it; then only the new one signs.\n' +
      'While an overlap runs, another rotation with --overlap is refused; without it, every replaced\n' +
      'secret ends at once (a leaked secret).',
    options: { id: str, overlap: str, 'secret-stdin': { type: 'boolean' } },
    plan(values) {
      const id = requirePartnerId(values);
      const overlap = overlapOption(values);
      const fromStdin = values['secret-stdin'] === true;
      return async (db, { callbacks }) => {
        const secret = fromStdin ? await readSecretFromStdin() : generateCallbackSecret();
        const rotation = await rotateCallbackSecret(db, id, secret, overlap, callbacks().secrets).catch(
          (err: unknown) => {
            if (err instanceof NoCallbackConfigured)
              throw new UsageError('the partner has no callback: use partner set-callback');
            if (err instanceof CallbackOverlapActive)
              throw new UsageError(
                `the previous rotation's overlap lasts until ${err.until}: rotate again after it, or with --overlap 0 to end every replaced secret now`,
              );
            throw err;
          },
        );
        return {
          partner_id: id,
          ...(fromStdin ? {} : { callback_secret: secret }),
          previous_secret_valid_until: found(rotation, id).previousValidUntil,
        };
      };
    },
  },
  'partner disable': {
    args: '--id <partner_id>',
    summary: "refuse the partner's keys from now on (401)",
    options: { id: str },
    plan(values) {
      const id = requirePartnerId(values);
      return async (db) => {
        found(await setPartnerStatus(db, id, 'disabled'), id);
        return { partner_id: id, status: 'disabled' };
      };
    },
  },
  'partner enable': {
    args: '--id <partner_id>',
    summary: "accept the partner's keys again",
    options: { id: str },
    plan(values) {
      const id = requirePartnerId(values);
      return async (db) => {
        found(await setPartnerStatus(db, id, 'active'), id);
        return { partner_id: id, status: 'active' };
      };
    },
  },
  'partner set-callback': {
    args: '--id <partner_id> --url <url> [--secret-stdin]',
    summary: 'set the callback URL and its signing secret (generated, or read from stdin)',
    details:
      'Prints {"partner_id", "callback_url"}, and "callback_secret" when it was generated: give it to\n' +
      'the partner, who verifies callbacks with it (Standard Webhooks, whsec_...). It is shown once\n' +
      'and stored encrypted. --secret-stdin reads a whsec_ secret from the first line of stdin\n' +
      'instead (secrets never go on a command line, where ps and shell history keep them).\n' +
      'The URL must be https in production (elsewhere http only for loopback); hosts that resolve to\n' +
      'loopback, private or link-local addresses are refused unless CALLBACK_ALLOW_PRIVATE_NETWORKS=true.',
    options: { id: str, url: str, 'secret-stdin': { type: 'boolean' } },
    plan(values) {
      const id = requirePartnerId(values);
      const url = requireOption(values, 'url');
      if (!URL.canParse(url) || !/^https?:$/.test(new URL(url).protocol)) {
        throw new UsageError('--url must be an http(s) URL');
      }
      const fromStdin = values['secret-stdin'] === true;
      return async (db, { callbacks }) => {
        const { policy, secrets } = callbacks();
        // The send-time guard, applied here too: a URL the worker would refuse is refused up front.
        // A name that does not resolve yet is accepted (the partner may still be setting up DNS):
        // every send resolves and checks it again.
        await vetCallbackUrl(url, policy).catch((err: unknown) => {
          if (err instanceof CallbackUrlRefused && err.unresolvable) return;
          // The operator sees what the guard found; partners get the message alone.
          throw err instanceof CallbackUrlRefused
            ? new UsageError(`--url refused: ${err.message} (${err.detail})`)
            : err;
        });
        const secret = fromStdin ? await readSecretFromStdin() : generateCallbackSecret();
        if (!secrets.encrypts) {
          process.stderr.write(
            'warning: PAYLOAD_ENCRYPTION_KEY is not set: the secret is stored unencrypted\n',
          );
        }
        found(await setPartnerCallback(db, id, { url, secret }, secrets), id);
        return { partner_id: id, callback_url: url, ...(fromStdin ? {} : { callback_secret: secret }) };
      };
    },
  },
  'partner clear-callback': {
    args: '--id <partner_id>',
    summary: 'stop sending callbacks to the partner',
    options: { id: str },
    plan(values) {
      const id = requirePartnerId(values);
      return async (db, { callbacks }) => {
        found(await setPartnerCallback(db, id, null, callbacks().secrets), id);
        return { partner_id: id, callback_url: null };
      };
    },
  },
  'partner deliveries': {
    args: '--id <partner_id> [--limit <n>]',
    summary: "list the partner's recent callbacks and every delivery attempt",
    details:
      'Prints {"partner_id", "events": [...]}, newest first (default 20 events, at most 500).\n' +
      'state: pending (being retried), delivered (2xx received), gave_up (no 2xx within 24 h),\n' +
      'skipped (no callback URL configured when it was due).',
    options: { id: str, limit: str },
    plan(values) {
      const id = requirePartnerId(values);
      const limit = countOption(values, 'limit', 20, 500);
      return async (db) => ({
        partner_id: id,
        events: (await listCallbackEvents(db, id, limit)).map(callbackEventAnswer),
      });
    },
  },
};
