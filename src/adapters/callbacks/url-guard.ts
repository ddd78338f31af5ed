import { isIP } from 'node:net';
import { classifyAddress, isAddressAllowed } from './address-policy';
import {
  createDnsResolver,
  HostNotFound,
  ResolutionUnavailable,
  type ResolvedAddress,
  type Resolver,
} from './dns-resolver';

export type { ResolvedAddress, Resolver } from './dns-resolver';

/** Which callback URLs the service may call; the same rules at set-callback time and at send time. */
export interface CallbackUrlPolicy {
  /** Production: https only. Elsewhere http is accepted for loopback receivers (local demos, tests). */
  requireHttps: boolean;
  /** CALLBACK_ALLOW_PRIVATE_NETWORKS: loopback, private and link-local destinations. */
  allowPrivateNetworks: boolean;
}

/**
 * What a partner is told of a refused URL: fixed texts that name no address, resolver, DNS error or
 * setting of ours (docs/api.md "Manage your callback"). What the guard found is in `detail`, for the
 * operator's log only (docs/decisions.md D69).
 */
export const URL_REFUSALS = {
  invalid: 'callback URL is not a valid URL',
  notHttp: 'callback URL must use https',
  httpInProduction: 'callback URL must use https in production',
  credentials: 'callback URL must not carry credentials; the signature authenticates us',
  notPublic: 'callback URL must resolve to a public address',
  httpNotLoopback: 'callback URL must use https (http is accepted only for a loopback receiver)',
  notFound: 'callback URL host does not resolve',
  unavailable: 'callback URL host could not be resolved now, retry later',
} as const;

/** The URL is not one the service will call; `message` is one of URL_REFUSALS, safe to show a partner. */
export class CallbackUrlRefused extends Error {
  override name = 'CallbackUrlRefused';
  /** The host did not resolve: nothing is known yet about where it points. */
  readonly unresolvable: boolean;
  /** The host could not be resolved now (a DNS timeout or failure): asking again later may pass. */
  readonly temporary: boolean;
  /** What the guard found (host, addresses, DNS codes, the setting at play): for logs, never for partners. */
  readonly detail: string;
  constructor(
    message: (typeof URL_REFUSALS)[keyof typeof URL_REFUSALS],
    opts: { detail?: string; unresolvable?: boolean; temporary?: boolean } = {},
  ) {
    super(message);
    this.unresolvable = opts.unresolvable ?? false;
    this.temporary = opts.temporary ?? false;
    this.detail = opts.detail ?? message;
  }
}

/** One resolver per process: its limit on resolutions at once is the process's (dns-resolver.ts). */
let systemResolver: Resolver | undefined;
const defaultResolver: Resolver = (hostname) => (systemResolver ??= createDnsResolver())(hostname);

/** A URL that passed the guard, with the addresses it was vetted for; connect to these only. */
export interface VettedCallbackUrl {
  url: URL;
  hostname: string;
  addresses: ResolvedAddress[];
}

/**
 * Checks a callback URL and resolves its host. Every address the name resolves to must pass, not
 * just one: the connection is then pinned to these addresses, so a DNS answer that changes between
 * this check and the connection (DNS rebinding) cannot steer the request elsewhere.
 */
export async function vetCallbackUrl(
  raw: string,
  policy: CallbackUrlPolicy,
  resolve: Resolver = defaultResolver,
): Promise<VettedCallbackUrl> {
  if (!URL.canParse(raw)) throw new CallbackUrlRefused(URL_REFUSALS.invalid);
  const url = new URL(raw);
  if (url.protocol !== 'https:' && url.protocol !== 'http:') {
    throw new CallbackUrlRefused(URL_REFUSALS.notHttp, { detail: `scheme ${url.protocol}` });
  }
  if (url.protocol === 'http:' && policy.requireHttps) {
    throw new CallbackUrlRefused(URL_REFUSALS.httpInProduction);
  }
  if (url.username || url.password) {
    throw new CallbackUrlRefused(URL_REFUSALS.credentials);
  }
  const hostname = url.hostname.replace(/^\[(.*)\]$/, '$1');
  const literal = isIP(hostname);
  let addresses: ResolvedAddress[];
  if (literal) {
    addresses = [{ address: hostname, family: literal === 6 ? 6 : 4 }];
  } else {
    try {
      addresses = await resolve(hostname);
    } catch (err) {
      throw refusalOfResolution(hostname, err);
    }
    if (addresses.length === 0)
      throw new CallbackUrlRefused(URL_REFUSALS.notFound, {
        detail: `host ${hostname} has no address`,
        unresolvable: true,
      });
  }
  for (const { address } of addresses) {
    if (!isAddressAllowed(address, policy.allowPrivateNetworks)) {
      const cls = classifyAddress(address);
      const setting =
        cls === 'reserved'
          ? 'never allowed'
          : `allowed only with CALLBACK_ALLOW_PRIVATE_NETWORKS=true (outside production)`;
      throw new CallbackUrlRefused(URL_REFUSALS.notPublic, {
        detail: `host ${hostname} resolves to a ${cls} address, ${address}: ${setting}`,
      });
    }
  }
  if (
    url.protocol === 'http:' &&
    !addresses.every(({ address }) => classifyAddress(address) === 'loopback')
  ) {
    throw new CallbackUrlRefused(URL_REFUSALS.httpNotLoopback, {
      detail: `http to ${hostname} (${addresses.map((a) => a.address).join(', ')})`,
    });
  }
  return { url, hostname, addresses };
}

function refusalOfResolution(hostname: string, err: unknown): CallbackUrlRefused {
  if (err instanceof HostNotFound)
    return new CallbackUrlRefused(URL_REFUSALS.notFound, { detail: err.message, unresolvable: true });
  if (err instanceof ResolutionUnavailable)
    return new CallbackUrlRefused(URL_REFUSALS.unavailable, { detail: err.message, temporary: true });
  // A resolver of another kind (tests): its code says which it was, as the system's would.
  const code = (err as { code?: unknown }).code;
  const text = `${hostname}: ${typeof code === 'string' ? code : err instanceof Error ? err.message : String(err)}`;
  return code === 'ENOTFOUND' || code === 'ENODATA'
    ? new CallbackUrlRefused(URL_REFUSALS.notFound, { detail: text, unresolvable: true })
    : new CallbackUrlRefused(URL_REFUSALS.unavailable, { detail: text, temporary: true });
}
