import { readFileSync } from 'node:fs';
import path from 'node:path';
import { completeLockfile, missingPlatformEntries, platformOf, type Lockfile } from '../../dev/lockfile';

// `npm ci` refuses a lockfile that lacks an entry for any platform package its packages name
// (see dev/lockfile.ts for why npm install can leave them out). The committed one must have them all.

const lock = JSON.parse(readFileSync(path.resolve(__dirname, '../../package-lock.json'), 'utf8')) as Lockfile;

describe('package-lock.json', () => {
  it('has an entry for every platform package of every locked package (npm ci accepts it)', () => {
    expect(missingPlatformEntries(lock)).toEqual([]);
  });

  it('locks the platform binaries of every platform, not only this machine', () => {
    for (const name of ['@swc/core-darwin-arm64', '@foundry-rs/anvil-darwin-arm64', '@esbuild/win32-x64'])
      expect({ name, locked: Boolean(lock.packages[`node_modules/${name}`]) }).toEqual({
        name,
        locked: true,
      });
  });
});

describe('completeLockfile', () => {
  const partial: Lockfile = {
    lockfileVersion: 3,
    packages: {
      '': { name: 'x' },
      'node_modules/@swc/core': {
        version: '1.2.3',
        dev: true,
        optionalDependencies: {
          '@swc/core-linux-x64-gnu': '1.2.3',
          '@swc/core-linux-arm-gnueabihf': '1.2.3',
          '@swc/core-win32-ia32-msvc': '1.2.3',
        },
      },
      'node_modules/@swc/core-linux-x64-gnu': { version: '1.2.3', optional: true, dev: true },
    },
  };

  it('adds the missing entries with the platform npm would record and leaves the rest alone', () => {
    const done = completeLockfile(partial);
    expect(done.packages['node_modules/@swc/core-linux-arm-gnueabihf']).toEqual({
      version: '1.2.3',
      cpu: ['arm'],
      dev: true,
      libc: ['glibc'],
      optional: true,
      os: ['linux'],
    });
    expect(done.packages['node_modules/@swc/core-win32-ia32-msvc']).toMatchObject({
      os: ['win32'],
      cpu: ['ia32'],
    });
    expect(done.packages['node_modules/@swc/core-linux-x64-gnu']).toBe(
      partial.packages['node_modules/@swc/core-linux-x64-gnu'],
    );
    expect(missingPlatformEntries(done)).toEqual([]);
  });

  it('reads the platform from the package name, and refuses one it cannot read', () => {
    expect(platformOf('@foundry-rs/anvil-darwin-amd64')).toEqual({ os: ['darwin'], cpu: ['x64'] });
    expect(platformOf('@unrs/resolver-binding-linux-riscv64-musl')).toEqual({
      os: ['linux'],
      cpu: ['riscv64'],
      libc: ['musl'],
    });
    expect(() => platformOf('@scope/native-binding')).toThrow('cannot tell the platform');
  });
});
