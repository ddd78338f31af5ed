import { readFileSync } from 'node:fs';
import path from 'node:path';

const ROOT = path.resolve(__dirname, '../..');
const manifest = (file: string) =>
  JSON.parse(readFileSync(path.join(ROOT, file), 'utf8')) as {
    dependencies?: Record<string, string>;
    devDependencies?: Record<string, string>;
    engines?: Record<string, string>;
  };

// The client is tested here against the root's installed packages: it must ask for those same
// versions, or a partner installs one nobody tested (docs/decisions.md D67).
describe('clients/typescript/package.json', () => {
  const client = manifest('clients/typescript/package.json');
  const root = manifest('package.json');

  it('asks for the versions of its dependencies that the repository installs and tests', () => {
    const installed = { ...root.devDependencies, ...root.dependencies };
    for (const [name, range] of Object.entries(client.dependencies ?? {}))
      expect({ name, range }).toEqual({ name, range: installed[name] });
  });

  it('says which Node.js it needs, as its README does', () => {
    const readme = readFileSync(path.join(ROOT, 'clients/typescript/README.md'), 'utf8');
    const major = /^>=(\d+)$/.exec(client.engines?.node ?? '')?.[1];
    expect(major).toBeDefined();
    expect(readme).toContain(`Node.js ${major} or later`);
  });
});
