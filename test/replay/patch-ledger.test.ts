import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';

// docs/workflow-changes.md keeps a ledger of every patch id (why, since, when it may be deprecated and
// removed). This holds it to the code: an id in a patched()/deprecatePatch() call has a row, and a row
// not marked removed has its call. A patch added without its row, or a row left behind, fails here.
const ROOT = path.join(__dirname, '..', '..');

function sourcesUnder(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) return sourcesUnder(full);
    return entry.name.endsWith('.ts') ? [full] : [];
  });
}

function idsInCode(): Map<string, 'patched' | 'deprecated'> {
  const ids = new Map<string, 'patched' | 'deprecated'>();
  for (const file of sourcesUnder(path.join(ROOT, 'src', 'workflows'))) {
    const source = readFileSync(file, 'utf8');
    for (const m of source.matchAll(/\b(patched|deprecatePatch)\(\s*['"`]([^'"`]+)['"`]\s*\)/g)) {
      ids.set(m[2]!, m[1] === 'patched' ? 'patched' : 'deprecated');
    }
    // A patch id held in a constant must still be visible to this check.
    if (/\b(patched|deprecatePatch)\(\s*[A-Za-z_]/.test(source)) {
      throw new Error(`${path.relative(ROOT, file)}: patch ids must be string literals at the call`);
    }
  }
  return ids;
}

function idsInLedger(): Map<string, string> {
  const doc = readFileSync(path.join(ROOT, 'docs', 'workflow-changes.md'), 'utf8');
  const section = doc.slice(
    doc.indexOf('## Patch ledger'),
    doc.indexOf('\n## ', doc.indexOf('## Patch ledger') + 1),
  );
  const rows = new Map<string, string>();
  for (const line of section.split('\n')) {
    const cells = line.split('|').map((c) => c.trim());
    const id = /^`([^`]+)`$/.exec(cells[1] ?? '')?.[1];
    if (id) rows.set(id, cells[6] ?? '');
  }
  return rows;
}

describe('the patch ledger (docs/workflow-changes.md)', () => {
  it('has a row for every patch id in the workflows, with the status the code shows', () => {
    const ledger = idsInLedger();
    for (const [id, status] of idsInCode()) {
      expect({ id, status: ledger.get(id) }).toEqual({ id, status });
    }
  });

  it('has the call in the workflows for every row not marked removed', () => {
    const code = idsInCode();
    for (const [id, status] of idsInLedger()) {
      if (status !== 'removed') expect({ id, inCode: code.has(id) }).toEqual({ id, inCode: true });
    }
  });

  it('reads the ledger it checks (the section and its table exist)', () => {
    const doc = readFileSync(path.join(ROOT, 'docs', 'workflow-changes.md'), 'utf8');
    expect(doc).toContain('## Patch ledger');
    expect(doc).toMatch(/\| Id +\| Why +\| Since +\|/);
  });
});
