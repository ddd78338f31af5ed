import { execFile } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';

const ROOT = path.resolve(__dirname, '../..');
const run = promisify(execFile);

// The TypeScript client's types are generated from the document the api serves (D67): a route or
// schema change without `npm run client:types` fails here, not in a partner's build.
describe('clients/typescript/src/schema.ts', () => {
  it('is what openapi-typescript generates from the served OpenAPI document', async () => {
    const checked = await run(process.execPath, ['--import', 'tsx', 'dev/client-types.ts', '--check'], {
      cwd: ROOT,
      env: { ...process.env, NODE_ENV: 'development' },
    }).then(
      ({ stdout }) => stdout.trim(),
      (err: { stderr?: string }) => err.stderr?.trim(),
    );
    expect(checked).toBe('clients/typescript/src/schema.ts is current');
  }, 60_000);
});
