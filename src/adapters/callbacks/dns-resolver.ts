import { Resolver as DnsResolver } from 'node:dns/promises';

/**
 * How callback hosts are resolved (docs/decisions.md D69): DNS queries through c-ares
 * (`dns.promises.Resolver`), which runs on the event loop's own sockets, never `dns.lookup`, whose
 * getaddrinfo takes one of libuv's 4 threadpool threads for as long as the partner's DNS takes to
 * answer. Those threads also resolve every other host the process connects to (its database's new
 * connections, the provider, the chain's RPC node) and do its file reads: a few slow or malicious
 * DNS servers must not stall them. A query has a deadline, and
 * only a few run at once per process; a query past its deadline, or one waiting too long for its
 * turn, is a temporary failure ("could not be resolved now"), never a crash or a hang.
 */

export interface ResolvedAddress {
  address: string;
  family: 4 | 6;
}

export type Resolver = (hostname: string) => Promise<ResolvedAddress[]>;

/** The name has no address: NXDOMAIN, or no A/AAAA record. Nothing is known of where it points. */
export class HostNotFound extends Error {
  override name = 'HostNotFound';
  constructor(
    readonly hostname: string,
    /** The resolver's codes, per family, for the operator's log. */
    readonly codes: string,
  ) {
    super(`${hostname} has no address (${codes})`);
  }
}

/** The name could not be resolved now (a timeout, a refused or failing DNS server, too many queries). */
export class ResolutionUnavailable extends Error {
  override name = 'ResolutionUnavailable';
  constructor(
    readonly hostname: string,
    readonly codes: string,
  ) {
    super(`${hostname} could not be resolved now (${codes})`);
  }
}

export interface DnsResolverOptions {
  /** The whole resolution, waiting for a turn included. */
  timeoutMs: number;
  /** Tries per DNS server within that time (c-ares retries a query that got no answer). */
  tries: number;
  /** Resolutions in progress at once in this process; more wait for a turn. */
  concurrency: number;
  /** DNS servers (`ip` or `ip:port`); the system's (/etc/resolv.conf) when absent. */
  servers?: string[];
}

export const DEFAULT_DNS_OPTIONS: DnsResolverOptions = { timeoutMs: 5_000, tries: 2, concurrency: 8 };

/**
 * Codes that say the name has no address of that family, now or ever (EBADNAME: no DNS name can be
 * written so, a label over 63 bytes for one); any other failure may pass.
 */
const NOT_FOUND = new Set(['ENOTFOUND', 'ENODATA', 'ENONAME', 'EBADNAME']);

/**
 * RFC 6761 §6.3: `localhost` and names under it are loopback, answered without asking DNS (c-ares
 * queries do not read /etc/hosts, and a DNS server must not be the one to say where they point).
 */
function isLocalhost(hostname: string): boolean {
  const name = hostname.toLowerCase().replace(/\.$/, '');
  return name === 'localhost' || name.endsWith('.localhost');
}

const LOOPBACK: ResolvedAddress[] = [
  { address: '127.0.0.1', family: 4 },
  { address: '::1', family: 6 },
];

/** At most this many lookups at once for names under one domain: one slow domain cannot hold every turn. */
const PER_DOMAIN = 2;

/**
 * The domain a name's lookups are counted against: its last two labels. Random names under one
 * domain (whose server never answers) share its turns; an approximation of the registrable domain
 * that never lets one domain hold more than PER_DOMAIN of the process's turns.
 */
function domainOf(hostname: string): string {
  return hostname.toLowerCase().replace(/\.$/, '').split('.').slice(-2).join('.');
}

export function createDnsResolver(options: DnsResolverOptions = DEFAULT_DNS_OPTIONS): Resolver {
  // Each try gets its share of the deadline; the deadline below holds whatever c-ares does.
  const tryMs = Math.max(1, Math.floor(options.timeoutMs / (options.tries + 1)));
  const slots = semaphore(options.concurrency);
  const domains = new Map<string, { slots: ReturnType<typeof semaphore>; users: number }>();

  return async (hostname) => {
    if (isLocalhost(hostname)) return LOOPBACK;
    const deadline = Date.now() + options.timeoutMs;
    const domain = domainOf(hostname);
    const entry = domains.get(domain) ?? {
      slots: semaphore(Math.min(PER_DOMAIN, options.concurrency)),
      users: 0,
    };
    domains.set(domain, entry);
    entry.users += 1;
    const leaveDomain = once(() => {
      entry.users -= 1;
      if (entry.users === 0) domains.delete(domain);
    });
    let releaseDomain: () => void = () => {};
    let release: () => void = () => {};
    try {
      releaseDomain = await entry.slots.acquire(options.timeoutMs);
      release = await slots.acquire(Math.max(0, deadline - Date.now()));
    } catch {
      releaseDomain();
      leaveDomain();
      throw new ResolutionUnavailable(hostname, 'too many resolutions in progress');
    }
    const giveBack = once(() => {
      release();
      releaseDomain();
      leaveDomain();
    });
    // A turn that comes too late for even one try is given back unused.
    if (deadline - Date.now() < tryMs) {
      giveBack();
      throw new ResolutionUnavailable(hostname, `no turn within ${options.timeoutMs} ms`);
    }
    // A resolver of its own, cancelled at the deadline: the turn is held as long as the deadline says,
    // not as long as c-ares would try every server in resolv.conf.
    const dns = new DnsResolver({ timeout: tryMs, tries: options.tries });
    if (options.servers) dns.setServers(options.servers);
    const queries = Promise.allSettled([dns.resolve4(hostname), dns.resolve6(hostname)]);
    void queries.finally(giveBack);
    let timer: NodeJS.Timeout | undefined;
    const expired = new Promise<'expired'>((resolve) => {
      timer = setTimeout(() => resolve('expired'), Math.max(0, deadline - Date.now()));
    });
    const settled = await Promise.race([queries, expired]).finally(() => clearTimeout(timer));
    if (settled === 'expired') {
      dns.cancel();
      throw new ResolutionUnavailable(hostname, `no answer within ${options.timeoutMs} ms`);
    }

    const [v4, v6] = settled;
    const addresses: ResolvedAddress[] = [
      ...(v4.status === 'fulfilled' ? v4.value.map((address) => ({ address, family: 4 as const })) : []),
      ...(v6.status === 'fulfilled' ? v6.value.map((address) => ({ address, family: 6 as const })) : []),
    ];
    // One family is enough: the connection goes only to addresses that were vetted.
    if (addresses.length > 0) return addresses;
    const codes = [v4, v6].map((r, i) => `${i === 0 ? 'A' : 'AAAA'} ${codeOf(r)}`).join(', ');
    const failures = [v4, v6].map(codeOf);
    if (failures.every((code) => NOT_FOUND.has(code))) throw new HostNotFound(hostname, codes);
    throw new ResolutionUnavailable(hostname, codes);
  };
}

function codeOf(result: PromiseSettledResult<string[]>): string {
  if (result.status === 'fulfilled') return 'ENODATA';
  const code = (result.reason as { code?: unknown }).code;
  return typeof code === 'string' ? code : 'EUNKNOWN';
}

/** At most `size` holders at once; a waiter gives up after `waitMs`. */
function semaphore(size: number) {
  let held = 0;
  const waiting: (() => void)[] = [];
  const release = () => {
    const next = waiting.shift();
    if (next) next();
    else held -= 1;
  };
  return {
    acquire(waitMs: number): Promise<() => void> {
      if (held < size) {
        held += 1;
        return Promise.resolve(once(release));
      }
      return new Promise((resolve, reject) => {
        const turn = () => {
          clearTimeout(timer);
          resolve(once(release));
        };
        const timer = setTimeout(() => {
          const at = waiting.indexOf(turn);
          if (at >= 0) waiting.splice(at, 1);
          reject(new Error('no turn'));
        }, waitMs);
        waiting.push(turn);
      });
    },
  };
}

function once(fn: () => void): () => void {
  let done = false;
  return () => {
    if (done) return;
    done = true;
    fn();
  };
}
