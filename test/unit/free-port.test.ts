import { readFileSync } from 'node:fs';
import net from 'node:net';
import { freePort } from '../../dev/local/infra/ports';

// freePort() (dev/local/infra/ports.ts): what every test stack, the bench and the launcher's tests
// bind. A port from the kernel's ephemeral range could be taken as an outgoing connection's source
// port before the caller bound it (EADDRINUSE in a CI run).
describe('freePort', () => {
  const [ephemeralFrom] = readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8')
    .trim()
    .split(/\s+/)
    .map(Number);

  it('gives ports below the kernel ephemeral range, each once, that the caller can bind', async () => {
    const ports: number[] = [];
    for (let i = 0; i < 50; i += 1) ports.push(await freePort());
    expect(new Set(ports).size).toBe(ports.length);
    for (const port of ports) expect(port).toBeLessThan(ephemeralFrom!);
    const server = net.createServer();
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(ports[0], '127.0.0.1', resolve);
    });
    server.close();
  });
});
