import { readFileSync } from 'node:fs';
import path from 'node:path';
import { ARTIFACT_FILE, compileFresh, sourceKey } from '../../dev/local/compile-test-usdt';

// The image deploys the test token from the committed ABI + bytecode (solc is a devDependency):
// it must be what the project's own compile script makes from the current source.
describe('contracts/TestUSDT.json', () => {
  const artifact = JSON.parse(readFileSync(path.resolve(__dirname, '../..', ARTIFACT_FILE), 'utf8')) as {
    key: string;
    abi: unknown;
    bytecode: string;
  };

  it('was compiled from the current contract source and settings', () => {
    expect(artifact.key).toBe(sourceKey());
  });

  it('holds what solc makes of it (run `npx tsx dev/local/compile-test-usdt.ts` to refresh)', () => {
    const fresh = compileFresh();
    expect(artifact.bytecode).toBe(fresh.bytecode);
    expect(artifact.abi).toEqual(fresh.abi);
  });
});
