import { readFileSync } from 'node:fs';
import path from 'node:path';
import { parse } from 'yaml';
import { CONFIG_KEYS, loadConfig } from '../../src/config';
import { SANDBOX_ENV_KEYS } from '../../dev/sandbox/config';

// The README's configuration tables and runbook anchors, against the code: a variable added to the
// config, or a default changed, without the README following, fails here.

const ROOT = path.resolve(__dirname, '../..');
const readme = readFileSync(path.join(ROOT, 'README.md'), 'utf8');

/** `| \`NAME\` | default | meaning |` rows of the README's tables, by variable name (first table wins). */
const rows = new Map<string, string>();
for (const m of readme.matchAll(/^\| `([A-Z][A-Z0-9_]*)`\s*\|\s*([^|]*?)\s*\|/gm)) {
  if (!rows.has(m[1]!)) rows.set(m[1]!, m[2]!);
}

describe('README', () => {
  it('lists every variable of the api and worker with its real default', () => {
    const defaults = loadConfig({}) as Record<string, unknown>;
    for (const key of CONFIG_KEYS) {
      const cell = rows.get(key);
      const value = defaults[key];
      const expected = value === undefined ? '—' : `\`${String(value)}\``;
      expect({ key, cell }).toEqual({ key, cell: expected });
    }
  });

  it('lists every variable of the provider sandbox', () => {
    for (const key of SANDBOX_ENV_KEYS) expect({ key, listed: rows.has(key) }).toEqual({ key, listed: true });
  });

  it('is what CI runs: .ci/run calls the README test command verbatim', () => {
    const ci = readFileSync(path.join(__dirname, '../../.ci/run'), 'utf8');
    expect(ci).toContain('\nnpm ci && npm test\n');
  });

  it('keeps the two Quick start commands', () => {
    const quickStart = readme.slice(
      readme.indexOf('## Quick start'),
      readme.indexOf('\n## ', readme.indexOf('## Quick start') + 1),
    );
    expect(quickStart.match(/```sh\n(.*)\n```/g)).toEqual([
      '```sh\nnpm install && npm start\n```',
      '```sh\nnpm ci && npm test\n```',
    ]);
  });

  it('has a section for every runbook link of the alert rules', () => {
    const anchors = new Set(
      [...readme.matchAll(/^#{2,4} (.+)$/gm)].map((m) =>
        m[1]!
          .trim()
          .toLowerCase()
          .replace(/[^\w\- ]/g, '')
          .replace(/ /g, '-'),
      ),
    );
    const rules = (
      parse(readFileSync(path.join(ROOT, 'ops/alerts.yml'), 'utf8')) as {
        groups: { rules: { alert: string; annotations: { runbook?: string } }[] }[];
      }
    ).groups.flatMap((g) => g.rules);
    for (const rule of rules) {
      const anchor = rule.annotations.runbook?.replace('README.md#', '');
      expect({ alert: rule.alert, anchor, found: anchor !== undefined && anchors.has(anchor) }).toMatchObject(
        { found: true },
      );
    }
  });
});
