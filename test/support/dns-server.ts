import dgram from 'node:dgram';
import type { AddressInfo } from 'node:net';

/**
 * A DNS server on loopback UDP, answering A and AAAA queries from a table: a real server for the
 * callback URL guard's resolver (src/adapters/callbacks/dns-resolver.ts) to query, so tests choose
 * what a name resolves to, and how the server misbehaves, without the machine's DNS.
 *
 * - a name in `records` answers its addresses of the asked family (none: NOERROR without answers),
 *   after its `delayMs`;
 * - `hang` names are never answered (a resolver timeout);
 * - `servfail` names answer SERVFAIL;
 * - any other name answers NXDOMAIN.
 */
export interface DnsRecords {
  records?: Record<string, { a?: string[]; aaaa?: string[]; delayMs?: number }>;
  hang?: string[];
  servfail?: string[];
}

export interface DnsServer {
  /** `127.0.0.1:<port>`, as Resolver.setServers takes it. */
  address: string;
  /** Every question received, as `<name> <A|AAAA>`, in order. */
  questions: string[];
  /** The most queries received and not answered yet at any moment (never-answered ones aside). */
  maxPending: number;
  close(): Promise<void>;
}

const TYPE_A = 1;
const TYPE_AAAA = 28;
const RCODE_SERVFAIL = 2;
const RCODE_NXDOMAIN = 3;

export async function startDnsServer(table: DnsRecords): Promise<DnsServer> {
  const socket = dgram.createSocket('udp4');
  const questions: string[] = [];
  const lower = (names: string[] = []) => new Set(names.map((n) => n.toLowerCase()));
  const hang = lower(table.hang);
  const servfail = lower(table.servfail);
  const records = new Map(Object.entries(table.records ?? {}).map(([n, r]) => [n.toLowerCase(), r]));

  let pending = 0;
  const server: DnsServer = {
    address: '',
    questions,
    maxPending: 0,
    close: () => new Promise((resolve) => socket.close(() => resolve())),
  };
  socket.on('message', (query, peer) => {
    const question = parseQuestion(query);
    if (!question) return;
    const { name, type, end } = question;
    questions.push(`${name} ${type === TYPE_AAAA ? 'AAAA' : type === TYPE_A ? 'A' : type}`);
    const key = name.toLowerCase();
    if (hang.has(key)) return;
    pending += 1;
    server.maxPending = Math.max(server.maxPending, pending);
    const found = records.get(key);
    const rcode = servfail.has(key) ? RCODE_SERVFAIL : found ? 0 : RCODE_NXDOMAIN;
    const addresses =
      rcode === 0 ? ((type === TYPE_A ? found?.a : type === TYPE_AAAA ? found?.aaaa : []) ?? []) : [];
    setTimeout(() => {
      pending -= 1;
      socket.send(answer(query, end, type, rcode, addresses), peer.port, peer.address);
    }, found?.delayMs ?? 0);
  });
  await new Promise<void>((resolve) => socket.bind(0, '127.0.0.1', resolve));
  server.address = `127.0.0.1:${(socket.address() as AddressInfo).port}`;
  return server;
}

/** The first question of a query: its name, its type, and where it ends. */
function parseQuestion(query: Buffer): { name: string; type: number; end: number } | undefined {
  if (query.length < 12 || query.readUInt16BE(4) < 1) return undefined;
  const labels: string[] = [];
  let at = 12;
  for (;;) {
    const length = query[at];
    if (length === undefined) return undefined;
    at += 1;
    if (length === 0) break;
    labels.push(query.subarray(at, at + length).toString('latin1'));
    at += length;
  }
  if (at + 4 > query.length) return undefined;
  return { name: labels.join('.'), type: query.readUInt16BE(at), end: at + 4 };
}

function answer(
  query: Buffer,
  questionEnd: number,
  type: number,
  rcode: number,
  addresses: string[],
): Buffer {
  const header = Buffer.alloc(12);
  query.copy(header, 0, 0, 2); // id
  const recursionDesired = query[2]! & 0x01;
  header[2] = 0x80 | 0x04 | recursionDesired; // QR, AA, RD as asked
  header[3] = 0x80 | rcode; // RA, RCODE
  header.writeUInt16BE(1, 4); // one question
  header.writeUInt16BE(addresses.length, 6);
  const records = addresses.map((address) => {
    const data = type === TYPE_A ? ipv4Bytes(address) : ipv6Bytes(address);
    const record = Buffer.alloc(12);
    record.writeUInt16BE(0xc00c, 0); // the question's name
    record.writeUInt16BE(type, 2);
    record.writeUInt16BE(1, 4); // IN
    record.writeUInt32BE(60, 6); // TTL
    record.writeUInt16BE(data.length, 10);
    return Buffer.concat([record, data]);
  });
  return Buffer.concat([header, query.subarray(12, questionEnd), ...records]);
}

function ipv4Bytes(address: string): Buffer {
  return Buffer.from(address.split('.').map(Number));
}

function ipv6Bytes(address: string): Buffer {
  const [head, tail] = address.includes('::') ? address.split('::') : [address, undefined];
  const groups = (part: string | undefined) => (part ? part.split(':') : []);
  const left = groups(head);
  const right = groups(tail);
  const all =
    tail === undefined
      ? left
      : [...left, ...Array<string>(8 - left.length - right.length).fill('0'), ...right];
  const bytes = Buffer.alloc(16);
  all.forEach((group, i) => bytes.writeUInt16BE(parseInt(group, 16), i * 2));
  return bytes;
}
