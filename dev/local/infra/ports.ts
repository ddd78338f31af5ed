import { readFileSync } from 'node:fs';
import net from 'node:net';

/**
 * A TCP port that was free on 127.0.0.1 a moment ago, below the kernel's ephemeral range. A port the
 * kernel picks (listen on 0) is one it also hands out as the source port of outgoing connections, and
 * a test stack makes thousands: between this probe and the caller's bind, one took such a port and the
 * bind failed (EADDRINUSE in a CI run). Ports below the range are never handed out that way. Another
 * process can still take the port before the caller binds it; that race is acceptable for tests, the
 * bench and the local launcher, which fail loudly on a busy port rather than sharing it.
 */
export async function freePort(): Promise<number> {
  const below = ephemeralPortsFrom();
  // A kernel whose ephemeral range starts this low leaves no room: its own pick, as before.
  if (below - LOWEST < 1_000) return kernelPick();
  for (let attempt = 0; attempt < 200; attempt += 1) {
    const port = LOWEST + Math.floor(Math.random() * (below - LOWEST));
    if (handedOut.has(port)) continue;
    if (await bindable(port)) {
      handedOut.add(port);
      return port;
    }
  }
  throw new Error(`no free TCP port between ${LOWEST} and ${below} on 127.0.0.1`);
}

/**
 * Below the ephemeral range, above the well-known services. Its top is 32768 at most: the Temporal
 * server records its services' ports in a smallint column (the bench's production server).
 */
const LOWEST = 20_000;
/** Ports already given out by this process: two callers never get the same one before binding it. */
const handedOut = new Set<number>();

/** The first of the kernel's ephemeral ports (net.ipv4.ip_local_port_range), capped at 32768. */
function ephemeralPortsFrom(): number {
  try {
    const first = Number(
      readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/)[0],
    );
    if (Number.isInteger(first) && first > 0) return Math.min(first, 32_768);
  } catch {
    // Not Linux: the IANA range starts at 49152, above the cap.
  }
  return 32_768;
}

function kernelPick(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.unref();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as net.AddressInfo;
      server.close((err) => (err ? reject(err) : resolve(port)));
    });
  });
}

function bindable(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = net.createServer();
    server.unref();
    server.once('error', () => resolve(false));
    server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)));
  });
}

/** Whether something accepts TCP connections on host:port right now. */
export function isListening(host: string, port: number, timeoutMs = 1_000): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect({ host, port });
    const done = (listening: boolean) => {
      socket.destroy();
      resolve(listening);
    };
    socket.setTimeout(timeoutMs, () => done(false));
    socket.once('connect', () => done(true));
    socket.once('error', () => done(false));
  });
}
