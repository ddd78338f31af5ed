import { classifyAddress, isAddressAllowed } from '../../src/adapters/callbacks/address-policy';
import {
  CallbackUrlRefused,
  URL_REFUSALS,
  vetCallbackUrl,
  type Resolver,
} from '../../src/adapters/callbacks/url-guard';

describe('callback address policy (SSRF guard)', () => {
  it.each([
    ['10.0.0.1', 'private'],
    ['10.255.255.255', 'private'],
    ['172.16.0.1', 'private'],
    ['172.31.255.254', 'private'],
    ['192.168.1.10', 'private'],
    ['100.64.0.1', 'private'],
    ['127.0.0.1', 'loopback'],
    ['127.1.2.3', 'loopback'],
    ['169.254.169.254', 'link-local'],
    ['169.254.0.1', 'link-local'],
    ['0.0.0.0', 'reserved'],
    ['0.1.2.3', 'reserved'],
    ['224.0.0.1', 'reserved'],
    ['255.255.255.255', 'reserved'],
    ['192.0.2.10', 'reserved'],
    ['::1', 'loopback'],
    ['[::1]', 'loopback'],
    ['0:0:0:0:0:0:0:1', 'loopback'],
    ['::', 'reserved'],
    ['fc00::1', 'private'],
    ['fd12:3456:789a::1', 'private'],
    ['fe80::1', 'link-local'],
    ['fe80::1%eth0', 'link-local'],
    ['febf::1', 'link-local'],
    ['ff02::1', 'reserved'],
    ['2001:db8::1', 'reserved'],
    // IPv4-mapped and IPv4-translated forms reach the embedded IPv4 host: judged by it.
    ['::ffff:127.0.0.1', 'loopback'],
    ['::ffff:7f00:1', 'loopback'],
    ['::ffff:10.1.2.3', 'private'],
    ['::ffff:169.254.169.254', 'link-local'],
    ['::ffff:0.0.0.0', 'reserved'],
    ['::ffff:8.8.8.8', 'public'],
    ['64:ff9b::192.168.0.1', 'private'],
    ['2002:c0a8:0101::1', 'private'],
    ['::127.0.0.1', 'reserved'],
    ['not-an-ip', 'reserved'],
  ])('%s is %s', (address, cls) => {
    expect(classifyAddress(address)).toBe(cls);
  });

  it.each([
    ['8.8.8.8'],
    ['1.1.1.1'],
    ['172.15.255.255'],
    ['172.32.0.1'],
    ['192.169.0.1'],
    ['100.128.0.1'],
    ['2606:4700:4700::1111'],
    ['2a00:1450:4001:82b::200e'],
  ])('%s is public', (address) => {
    expect(classifyAddress(address)).toBe('public');
    expect(isAddressAllowed(address, false)).toBe(true);
  });

  it('allows loopback, private and link-local only when the operator opts in; never reserved ones', () => {
    for (const address of [
      '127.0.0.1',
      '::1',
      '10.0.0.1',
      '192.168.0.1',
      'fd00::1',
      'fe80::1',
      '169.254.1.1',
    ]) {
      expect(isAddressAllowed(address, false)).toBe(false);
      expect(isAddressAllowed(address, true)).toBe(true);
    }
    for (const address of ['0.0.0.0', '::', '224.0.0.1', 'ff02::1']) {
      expect(isAddressAllowed(address, true)).toBe(false);
    }
  });
});

describe('vetCallbackUrl', () => {
  const strict = { requireHttps: true, allowPrivateNetworks: false };
  const local = { requireHttps: false, allowPrivateNetworks: false };
  const localAllowed = { requireHttps: false, allowPrivateNetworks: true };
  const resolvesTo =
    (...addresses: string[]): Resolver =>
    async () =>
      addresses.map((address) => ({ address, family: address.includes(':') ? 6 : 4 }));

  /** The refusal's text for partners; `detailOf` gives what it found, for the operator's log. */
  const refused = async (p: Promise<unknown>) => {
    const err = await p.then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(CallbackUrlRefused);
    return err as CallbackUrlRefused;
  };
  const refusal = async (p: Promise<unknown>) => (await refused(p)).message;
  const detailOf = async (p: Promise<unknown>) => (await refused(p)).detail;

  it('accepts an https URL whose host resolves to public addresses, and returns them for pinning', async () => {
    const vetted = await vetCallbackUrl(
      'https://hooks.partner.example/cb?x=1',
      strict,
      resolvesTo('93.184.215.14'),
    );
    expect(vetted.hostname).toBe('hooks.partner.example');
    expect(vetted.addresses).toEqual([{ address: '93.184.215.14', family: 4 }]);
  });

  it('refuses http in production, even for loopback', async () => {
    expect(
      await refusal(vetCallbackUrl('http://127.0.0.1:8080/cb', { ...strict, allowPrivateNetworks: true })),
    ).toMatch(/https in production/);
  });

  it('accepts http outside production only for a loopback receiver that is explicitly allowed', async () => {
    await expect(vetCallbackUrl('http://127.0.0.1:8080/cb', localAllowed)).resolves.toBeDefined();
    await expect(vetCallbackUrl('http://[::1]:8080/cb', localAllowed)).resolves.toBeDefined();
    expect(await refusal(vetCallbackUrl('http://127.0.0.1:8080/cb', local))).toBe(URL_REFUSALS.notPublic);
    expect(await detailOf(vetCallbackUrl('http://127.0.0.1:8080/cb', local))).toMatch(/loopback address/);
    expect(
      await refusal(vetCallbackUrl('http://hooks.partner.example/cb', local, resolvesTo('93.184.215.14'))),
    ).toMatch(/must use https/);
    expect(await refusal(vetCallbackUrl('http://10.0.0.5/cb', localAllowed))).toMatch(/only for a loopback/);
  });

  it.each([
    'https://10.0.0.1/cb',
    'https://172.16.5.4/cb',
    'https://192.168.0.1/cb',
    'https://127.0.0.1/cb',
    'https://[::1]/cb',
    'https://[fc00::1]/cb',
    'https://[fe80::1]/cb',
    'https://169.254.169.254/latest/meta-data',
    'https://0.0.0.0/cb',
    'https://[::ffff:127.0.0.1]/cb',
    'https://[::ffff:a9fe:a9fe]/cb',
  ])('refuses the literal %s', async (url) => {
    const refusal = await refused(vetCallbackUrl(url, strict));
    expect(refusal.message).toBe(URL_REFUSALS.notPublic);
    expect(refusal.detail).toMatch(/resolves to a (private|loopback|link-local|reserved) address/);
  });

  it('refuses a name when any of its addresses is private (a mixed answer is how rebinding starts)', async () => {
    const refusal = await refused(
      vetCallbackUrl('https://hooks.partner.example/cb', strict, resolvesTo('93.184.215.14', '10.0.0.7')),
    );
    // The partner's text names no address and no setting of ours; the log's detail does.
    expect(refusal.message).toBe('callback URL must resolve to a public address');
    expect(refusal.detail).toMatch(/private address, 10\.0\.0\.7/);
    expect(refusal.detail).toMatch(/CALLBACK_ALLOW_PRIVATE_NETWORKS/);
  });

  it('no refusal text names an address, a host, a DNS code or a setting', () => {
    for (const text of Object.values(URL_REFUSALS))
      expect(text).not.toMatch(/[0-9]\.[0-9]|::|partner\.example|E[A-Z]{4,}|[A-Z]+_[A-Z_]+/);
  });

  it('resolves names through the default resolver: localhost is loopback', async () => {
    expect(await detailOf(vetCallbackUrl('https://localhost/cb', strict))).toMatch(/loopback address/);
    const vetted = await vetCallbackUrl('http://localhost:9/cb', localAllowed);
    expect(vetted.addresses.every((a) => classifyAddress(a.address) === 'loopback')).toBe(true);
  });

  it('refuses what is not an http(s) URL, credentials in the URL, and hosts that do not resolve', async () => {
    expect(await refusal(vetCallbackUrl('not a url', strict))).toMatch(/not a valid URL/);
    expect(await refusal(vetCallbackUrl('ftp://hooks.partner.example/', strict))).toMatch(/https/);
    expect(await refusal(vetCallbackUrl('file:///etc/passwd', strict))).toMatch(/https/);
    expect(await refusal(vetCallbackUrl('https://user:pw@hooks.partner.example/', strict))).toMatch(
      /credentials/,
    );
    const nxdomain: Resolver = () =>
      Promise.reject(
        Object.assign(new Error('queryA ENOTFOUND no-such-host.invalid'), { code: 'ENOTFOUND' }),
      );
    const unresolved = await refused(vetCallbackUrl('https://no-such-host.invalid/cb', strict, nxdomain));
    expect(unresolved).toMatchObject({
      message: URL_REFUSALS.notFound,
      unresolvable: true,
      temporary: false,
    });
    expect(unresolved.detail).toMatch(/no-such-host\.invalid: ENOTFOUND/);
  });
});
