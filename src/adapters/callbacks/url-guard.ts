import { lookup } from 'node:dns/promises';
import { isIP } from 'node:net';
import { classifyAddress, isAddressAllowed } from './address-policy';

/** Which callback URLs the service may call; the same rules at set-callback time and at send time. */
export interface CallbackUrlPolicy {
  /** Production: https only. Elsewhere http is accepted for loopback receivers (local demos, tests). */
  requireHttps: boolean;
  /** CALLBACK_ALLOW_PRIVATE_NETWORKS: loopback, private and link-local destinations. */
  allowPrivateNetworks: boolean;
}

/** The URL is not one the service will call; the message says why and is safe to show an operator. */
export class CallbackUrlRefused extends Error {
  override name = 'CallbackUrlRefused';
  constructor(
    message: string,
    /** The host did not resolve: nothing is known yet about where it points. */
    readonly unresolvable = false,
  ) {
    super(message);
  }
}

export interface ResolvedAddress {
  address: string;
  family: 4 | 6;
}

export type Resolver = (hostname: string) => Promise<ResolvedAddress[]>;

const systemResolver: Resolver = async (hostname) => {
  const found = await lookup(hostname, { all: true, verbatim: true });
  return found.map((a) => ({ address: a.address, family: a.family === 6 ? 6 : 4 }));
};

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
  resolve: Resolver = systemResolver,
): Promise<VettedCallbackUrl> {
  if (!URL.canParse(raw)) throw new CallbackUrlRefused('callback URL is not a valid URL');
  const url = new URL(raw);
  if (url.protocol !== 'https:' && url.protocol !== 'http:') {
    throw new CallbackUrlRefused('callback URL must use https');
  }
  if (url.protocol === 'http:' && policy.requireHttps) {
    throw new CallbackUrlRefused('callback URL must use https in production');
  }
  if (url.username || url.password) {
    throw new CallbackUrlRefused('callback URL must not carry credentials; the signature authenticates us');
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
      const code = (err as { code?: string }).code ?? 'lookup failed';
      throw new CallbackUrlRefused(`callback host ${hostname} does not resolve (${code})`, true);
    }
    if (addresses.length === 0)
      throw new CallbackUrlRefused(`callback host ${hostname} does not resolve`, true);
  }
  for (const { address } of addresses) {
    if (!isAddressAllowed(address, policy.allowPrivateNetworks)) {
      const cls = classifyAddress(address);
      const hint = cls === 'reserved' ? '' : ' (set CALLBACK_ALLOW_PRIVATE_NETWORKS=true to allow it)';
      throw new CallbackUrlRefused(
        `callback host ${hostname} resolves to a ${cls} address, ${address}${hint}`,
      );
    }
  }
  if (
    url.protocol === 'http:' &&
    !addresses.every(({ address }) => classifyAddress(address) === 'loopback')
  ) {
    throw new CallbackUrlRefused(
      'callback URL must use https (http is accepted only for a loopback receiver)',
    );
  }
  return { url, hostname, addresses };
}
