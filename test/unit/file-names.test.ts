import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';

// One file-suffix convention (docs/architecture.md, "Where things live"): workflows are
// `<name>.workflow.ts` beside their `<name>.contract.ts`, activities `<name>.activities.ts`, the api's
// routes `<name>.routes.ts` beside their `<name>.schemas.ts`.

const SRC = path.resolve(__dirname, '../../src');
const filesUnder = (dir: string): string[] =>
  readdirSync(path.join(SRC, dir), { recursive: true, encoding: 'utf8' })
    .filter((f) => f.endsWith('.ts'))
    .map((f) => path.join(dir, f));

describe('file names', () => {
  it('a file that creates activities is <name>.activities.ts, and every such file does', () => {
    for (const file of filesUnder('activities').filter((f) => path.basename(f) !== 'index.ts')) {
      const createsActivities = /export function create\w*Activities\(/.test(
        readFileSync(path.join(SRC, file), 'utf8'),
      );
      expect({ file, createsActivities }).toEqual({
        file,
        createsActivities: file.endsWith('.activities.ts'),
      });
    }
  });

  it('a file of the api that declares routes is <name>.routes.ts, and every such file does', () => {
    for (const file of filesUnder('api')) {
      const declaresRoutes = /\bapp\.(get|post|put|patch|delete|route)\(/.test(
        readFileSync(path.join(SRC, file), 'utf8'),
      );
      expect({ file, declaresRoutes }).toEqual({ file, declaresRoutes: file.endsWith('.routes.ts') });
    }
  });

  it('request and response schemas of the api live in <name>.schemas.ts', () => {
    for (const file of filesUnder('api').filter((f) => /schemas/.test(path.basename(f))))
      expect(file).toMatch(/\.schemas\.ts$/);
  });

  it('every workflow is <name>.workflow.ts with its <name>.contract.ts', () => {
    const top = readdirSync(path.join(SRC, 'workflows')).filter((f) => f.endsWith('.workflow.ts'));
    expect(top.length).toBeGreaterThan(0);
    for (const workflow of top)
      expect(readdirSync(path.join(SRC, 'workflows'))).toContain(
        workflow.replace('.workflow.ts', '.contract.ts'),
      );
  });
});
