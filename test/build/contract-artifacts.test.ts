import { readFileSync } from 'node:fs';
import path from 'node:path';
import {
  artifactFile,
  compileFresh,
  LOCAL_CONTRACT_NAMES,
  sourceKey,
} from '../../dev/local/compile-contracts';

// The image deploys the local chain's contracts from the committed ABI + bytecode (solc is a
// devDependency): each must be what the project's own compile script makes from the current source.
describe.each(LOCAL_CONTRACT_NAMES)('contracts/%s.json', (name) => {
  const artifact = JSON.parse(readFileSync(path.resolve(__dirname, '../..', artifactFile(name)), 'utf8')) as {
    key: string;
    abi: unknown;
    bytecode: string;
  };

  it('was compiled from the current contract source and settings', () => {
    expect(artifact.key).toBe(sourceKey(name));
  });

  it('holds what solc makes of it (run `npx tsx dev/local/compile-contracts.ts` to refresh)', () => {
    const fresh = compileFresh(name);
    expect(artifact.bytecode).toBe(fresh.bytecode);
    expect(artifact.abi).toEqual(fresh.abi);
  });
});
