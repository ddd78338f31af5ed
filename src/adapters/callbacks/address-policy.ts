import { isIPv4, isIPv6 } from 'node:net';

/**
 * Where an IP address points, as far as the SSRF guard cares:
 * - public: the internet; always allowed.
 * - loopback, private, link-local: the operator's own host and networks (RFC 1918, CGNAT, IPv6
 *   unique-local and site-local, 169.254/16 with the cloud metadata endpoints, fe80::/10); allowed
 *   only when the operator opts in (CALLBACK_ALLOW_PRIVATE_NETWORKS).
 * - reserved: unspecified, multicast, broadcast, documentation and other special-purpose ranges;
 *   never a partner's server, so never allowed. 0.0.0.0 belongs here: Linux connects it to the
 *   local host.
 */
export type AddressClass = 'public' | 'loopback' | 'private' | 'link-local' | 'reserved';

type V4Range = readonly [prefix: string, bits: number, cls: Exclude<AddressClass, 'public'>];

// IANA IPv4 special-purpose registry, reduced to what a callback must not reach.
const V4_RANGES: readonly V4Range[] = [
  ['0.0.0.0', 8, 'reserved'],
  ['10.0.0.0', 8, 'private'],
  ['100.64.0.0', 10, 'private'],
  ['127.0.0.0', 8, 'loopback'],
  ['169.254.0.0', 16, 'link-local'],
  ['172.16.0.0', 12, 'private'],
  ['192.0.0.0', 24, 'reserved'],
  ['192.0.2.0', 24, 'reserved'],
  ['192.88.99.0', 24, 'reserved'],
  ['192.168.0.0', 16, 'private'],
  ['198.18.0.0', 15, 'reserved'],
  ['198.51.100.0', 24, 'reserved'],
  ['203.0.113.0', 24, 'reserved'],
  ['224.0.0.0', 4, 'reserved'],
  ['240.0.0.0', 4, 'reserved'],
];

function v4ToInt(address: string): number {
  return address.split('.').reduce((acc, part) => acc * 256 + Number(part), 0);
}

function classifyV4Int(value: number): AddressClass {
  for (const [prefix, bits, cls] of V4_RANGES) {
    const size = 2 ** (32 - bits);
    const start = v4ToInt(prefix);
    if (value >= start && value < start + size) return cls;
  }
  return 'public';
}

/** 16 bytes of an IPv6 address (zone id ignored, embedded dotted IPv4 accepted). */
function v6Bytes(address: string): Uint8Array {
  let text = address.split('%')[0]!;
  const lastColon = text.lastIndexOf(':');
  const last = text.slice(lastColon + 1);
  if (isIPv4(last)) {
    // a:b::1.2.3.4 is a:b::0102:0304; rewriting it leaves only hex groups to parse.
    const v4 = v4ToInt(last);
    text = `${text.slice(0, lastColon + 1)}${(v4 >>> 16).toString(16)}:${(v4 & 0xffff).toString(16)}`;
  }
  const groupsOf = (s: string) => (s === '' ? [] : s.split(':').map((g) => parseInt(g, 16)));
  const [head = '', tail] = text.split('::');
  const headGroups = groupsOf(head);
  const tailGroups = tail === undefined ? [] : groupsOf(tail);
  const zeros = new Array<number>(8 - headGroups.length - tailGroups.length).fill(0);
  const groups = [...headGroups, ...zeros, ...tailGroups];
  const bytes = new Uint8Array(16);
  groups.forEach((g, i) => {
    bytes[i * 2] = g >> 8;
    bytes[i * 2 + 1] = g & 0xff;
  });
  return bytes;
}

const bytesToV4Int = (b: Uint8Array, at: number) =>
  ((b[at]! << 24) >>> 0) + (b[at + 1]! << 16) + (b[at + 2]! << 8) + b[at + 3]!;

function classifyV6(b: Uint8Array): AddressClass {
  const zeroUntil = (n: number) => b.subarray(0, n).every((x) => x === 0);
  const word = (i: number) => (b[i * 2]! << 8) | b[i * 2 + 1]!;
  if (zeroUntil(15)) return b[15] === 1 ? 'loopback' : 'reserved'; // ::1, and :: (unspecified)
  // IPv4-mapped (::ffff:a.b.c.d) reaches the IPv4 host itself: judge the embedded address.
  if (zeroUntil(10) && b[10] === 0xff && b[11] === 0xff) return classifyV4Int(bytesToV4Int(b, 12));
  // NAT64 well-known prefix 64:ff9b::/96 translates to the embedded IPv4 address.
  if (
    word(0) === 0x64 &&
    word(1) === 0xff9b &&
    word(2) === 0 &&
    word(3) === 0 &&
    word(4) === 0 &&
    word(5) === 0
  ) {
    return classifyV4Int(bytesToV4Int(b, 12));
  }
  if (word(0) === 0x64 && word(1) === 0xff9b && word(2) === 1) return 'private'; // local-use NAT64
  // IPv4-compatible (deprecated) and the rest of ::/8, NAT64 prefixes aside.
  if (b[0] === 0 && word(0) !== 0x64) return 'reserved';
  // 6to4 (2002::/16) tunnels to the IPv4 address in bits 16-47.
  if (word(0) === 0x2002) return classifyV4Int(bytesToV4Int(b, 2));
  if ((b[0]! & 0xfe) === 0xfc) return 'private'; // fc00::/7 unique local
  if (b[0] === 0xfe && (b[1]! & 0xc0) === 0x80) return 'link-local'; // fe80::/10
  if (b[0] === 0xfe && (b[1]! & 0xc0) === 0xc0) return 'private'; // fec0::/10 site-local (deprecated)
  if (b[0] === 0xff) return 'reserved'; // multicast
  if (word(0) === 0x2001 && word(1) === 0) return 'reserved'; // Teredo: hides an IPv4 we cannot vet
  if (word(0) === 0x2001 && word(1) === 0xdb8) return 'reserved'; // documentation
  if (word(0) === 0x100 && word(1) === 0 && word(2) === 0 && word(3) === 0) return 'reserved'; // discard
  // Everything outside global unicast 2000::/3 is unassigned or special.
  return (b[0]! & 0xe0) === 0x20 ? 'public' : 'reserved';
}

/** Classifies an IP literal; anything that is not one is refused as reserved. */
export function classifyAddress(address: string): AddressClass {
  const bare = address.startsWith('[') && address.endsWith(']') ? address.slice(1, -1) : address;
  if (isIPv4(bare)) return classifyV4Int(v4ToInt(bare));
  if (isIPv6(bare)) return classifyV6(v6Bytes(bare));
  return 'reserved';
}

/** Whether a callback may connect to this address under the operator's setting. */
export function isAddressAllowed(address: string, allowPrivateNetworks: boolean): boolean {
  const cls = classifyAddress(address);
  if (cls === 'public') return true;
  if (cls === 'reserved') return false;
  return allowPrivateNetworks;
}
