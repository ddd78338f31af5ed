import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { parse } from 'yaml';
import { API_ERRORS, type HttpError } from '../../src/api/errors';
import {
  loadAdminCallbacksConfig,
  loadAdminDatabaseConfig,
  loadAdminTemporalConfig,
  loadApiConfig,
  loadMigrateConfig,
  loadWorkerConfig,
} from '../../src/config';
import { PROCESS_VARIABLES } from '../../src/config/processes';
import { CONFIG_KEYS } from '../../src/config/variables';
import { SANDBOX_ENV_KEYS } from '../../dev/sandbox/config';
import { LAUNCHER_DEFAULTS } from '../../dev/local/stack-settings';

// The README and the docs pages that restate code, against the code: a variable added to the
// config, removed, or given a new default without docs/configuration.md following fails here, and
// so does an alert rule whose runbook link leads nowhere, or a link that leaves the repository.

const ROOT = path.resolve(__dirname, '../..');
const read = (file: string) => readFileSync(path.join(ROOT, file), 'utf8');
const readme = read('README.md');
const configuration = read('docs/configuration.md');
const operations = read('docs/operations.md');

/** The text of the `## <title…>` section of a markdown page, up to the next `## ` heading. */
function section(markdown: string, titleStart: string): string {
  const start = markdown.indexOf(`\n## ${titleStart}`);
  if (start < 0) throw new Error(`no "## ${titleStart}" section`);
  const end = markdown.indexOf('\n## ', start + 1);
  return markdown.slice(start, end < 0 ? undefined : end);
}

/** `| \`NAME\` | default | ... |` rows of a markdown table: the cells after the name, by variable name. */
function variableRows(markdown: string): Map<string, string[]> {
  const rows = new Map<string, string[]>();
  for (const m of markdown.matchAll(/^\| `([A-Z][A-Z0-9_]*)`\s*\|(.*)\|\s*$/gm))
    rows.set(
      m[1]!,
      m[2]!.split('|').map((cell) => cell.trim()),
    );
  return rows;
}

/** GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens. */
function anchorsOf(markdown: string): Set<string> {
  return new Set(
    [...markdown.matchAll(/^#{1,4} (.+)$/gm)].map((m) =>
      m[1]!
        .trim()
        .toLowerCase()
        .replace(/[^\w\- ]/g, '')
        .replace(/ /g, '-'),
    ),
  );
}

const alertRules = (
  parse(read('ops/alerts.yml')) as {
    groups: { rules: { alert: string; annotations: { runbook_url?: string } }[] }[];
  }
).groups.flatMap((g) => g.rules);

describe('docs/configuration.md', () => {
  const serviceRows = variableRows(section(configuration, "The service's processes"));

  it('lists every variable of the service with its real default', () => {
    // Each process's own default, which must be the same wherever a variable is read.
    const defaults: Record<string, unknown> = {
      ...loadAdminDatabaseConfig({}),
      ...loadAdminTemporalConfig({}),
      ...loadAdminCallbacksConfig({}),
      ...loadMigrateConfig({}),
      ...loadWorkerConfig({}),
      ...loadApiConfig({}),
    };
    for (const key of CONFIG_KEYS) {
      const value = defaults[key];
      const expected = value === undefined ? '—' : `\`${String(value)}\``;
      expect({ key, cell: serviceRows.get(key)?.[0] }).toEqual({ key, cell: expected });
    }
  });

  it('says which processes read each variable', () => {
    for (const key of CONFIG_KEYS) {
      const readers = Object.entries(PROCESS_VARIABLES)
        .filter(([, names]) => (names as readonly string[]).includes(key))
        .map(([process]) => process);
      expect({ key, readBy: serviceRows.get(key)?.[1] }).toEqual({ key, readBy: readers.join(', ') });
    }
  });

  it('lists no variable of the service that no process reads', () => {
    const known = new Set<string>(CONFIG_KEYS);
    for (const key of serviceRows.keys()) expect({ key, read: known.has(key) }).toEqual({ key, read: true });
  });

  it('lists every variable of the launcher with its real default', () => {
    const toolingRows = variableRows(section(configuration, 'Tooling and demo'));
    for (const [key, value] of Object.entries(LAUNCHER_DEFAULTS))
      expect({ key, cell: toolingRows.get(key)?.[0] }).toEqual({ key, cell: `\`${value}\`` });
  });

  it('lists every variable of the provider sandbox', () => {
    const sandboxRows = variableRows(section(configuration, 'Provider sandbox'));
    for (const key of SANDBOX_ENV_KEYS)
      expect({ key, listed: sandboxRows.has(key) }).toEqual({ key, listed: true });
  });
});

describe('docs/decisions.md', () => {
  const entries = [...read('docs/decisions.md').matchAll(/^### (D\d+)\. .+\n\n((?:.+\n)+)/gm)];

  it('is a record: every decision has the date it was written and its status', () => {
    expect(entries.length).toBeGreaterThan(30);
    for (const [, id, meta] of entries) {
      const lines = meta!.trimEnd().split('\n');
      expect({ id, date: lines[0] }).toEqual({
        id,
        date: expect.stringMatching(/^Date: \d{4}-\d\d-\d\d\\$/),
      });
      expect({ id, status: lines[1] }).toEqual({
        id,
        status: expect.stringMatching(
          /^Status: (active|superseded by \[D\d+\]\(#[\w-]+\).* on \d{4}-\d\d-\d\d)\\?$/,
        ),
      });
      if (lines[2] !== undefined)
        expect({ id, revised: lines[2] }).toEqual({
          id,
          revised: expect.stringMatching(/^Revised: \d{4}-\d\d-\d\d /),
        });
    }
  });

  it('never reuses a number', () => {
    const ids = entries.map(([, id]) => id);
    expect(new Set(ids).size).toBe(ids.length);
  });
});

describe('partner-facing messages', () => {
  // The messages of the api's one table of errors that take no argument.
  const messages = Object.values(API_ERRORS)
    .filter((make) => make.length === 0)
    .map((make) => (make as () => HttpError)().message);

  it('docs/api.md quotes every one', () => {
    const api = read('docs/api.md');
    for (const message of messages)
      expect({ message, quoted: api.includes(`\`${message}\``) }).toEqual({ message, quoted: true });
  });

  it("docs/api.md's error catalogue quotes every entry of API_ERRORS, arguments as <placeholders>", () => {
    const api = read('docs/api.md');
    const catalogue = api.slice(api.indexOf('## Error catalogue'), api.indexOf('## Examples'));
    // What the catalogue writes for each argument; a new entry with arguments must be added here.
    const placeholders: Partial<Record<keyof typeof API_ERRORS, unknown[]>> = {
      repeatedJsonMember: ['<name>'],
      methodNotAllowed: [[]],
      payoutFinal: ['<STATUS>'],
      chargeNoLongerPayable: ['<STATUS>'],
      callbackUrlRefused: ['<reason>'],
      callbackOverlapActive: ['<until>'],
      otherClientError: [],
    };
    for (const [name, make] of Object.entries(API_ERRORS)) {
      // invalidRequest words the schemas' messages, which the catalogue lists per endpoint.
      if (name === 'invalidRequest') continue;
      const args = placeholders[name as keyof typeof API_ERRORS] ?? [];
      expect({ name, args: make.length === 0 || args.length > 0 }).toEqual({ name, args: true });
      const { message } = (make as (...a: unknown[]) => HttpError)(...args);
      expect({ name, message, quoted: catalogue.includes(`\`${message}\``) }).toEqual({
        name,
        message,
        quoted: true,
      });
    }
  });

  it('no other page quotes one: they link to docs/api.md', () => {
    const pages = [
      'README.md',
      ...readdirSync(path.join(ROOT, 'docs'))
        .filter((f) => f.endsWith('.md'))
        .map((f) => `docs/${f}`),
    ];
    for (const page of pages.filter((p) => p !== 'docs/api.md')) {
      const text = read(page);
      for (const message of messages)
        expect({ page, message, quoted: text.includes(`\`${message}\``) }).toEqual({
          page,
          message,
          quoted: false,
        });
    }
  });
});

describe('README', () => {
  it('is what CI runs: .ci/run calls the README test command verbatim', () => {
    const ci = read('.ci/run');
    expect(ci).toContain('\nnpm ci && npm test\n');
  });

  it('keeps the two Quick start commands', () => {
    expect(section(readme, 'Quick start').match(/```sh\n(.*)\n```/g)).toEqual([
      '```sh\nnpm ci && npm start\n```',
      '```sh\nnpm ci && npm test\n```',
    ]);
  });

  it('stays a five-minute read (at most 10 KB); details belong in docs/', () => {
    expect(Buffer.byteLength(readme, 'utf8')).toBeLessThanOrEqual(10 * 1024);
  });
});

describe('ops/alerts.yml', () => {
  it('links every rule to a runbook section that exists', () => {
    for (const rule of alertRules) {
      // runbook_url is the configured base (where docs/ is served) and a page#section of docs/.
      const url = rule.annotations.runbook_url ?? '';
      const [page, anchor] = url.replace('{{ $externalLabels.runbook_base_url }}/', '').split('#');
      const file = page && `docs/${page}`;
      const found =
        !!file && !!anchor && existsSync(path.join(ROOT, file)) && anchorsOf(read(file)).has(anchor);
      expect({ alert: rule.alert, runbook_url: url, found }).toMatchObject({ found: true });
    }
  });

  it('has every rule in the alert table of docs/operations.md', () => {
    const table = section(operations, 'Metrics and alerts');
    for (const rule of alertRules) {
      expect({ alert: rule.alert, listed: table.includes(`\`${rule.alert}\``) }).toEqual({
        alert: rule.alert,
        listed: true,
      });
    }
  });
});

/**
 * Pages linked from README and docs/ that other branches of this change write. Empty this list when
 * they are merged: from then on a missing page fails like any broken link.
 */

describe('links in README.md and docs/', () => {
  const pages = [
    'README.md',
    ...readdirSync(path.join(ROOT, 'docs'))
      .filter((f) => f.endsWith('.md'))
      .map((f) => `docs/${f}`),
  ];

  it('docs/README.md and README.md index every page of docs/', () => {
    const index = read('docs/README.md');
    for (const page of pages.filter((p) => p.startsWith('docs/') && p !== 'docs/README.md')) {
      const name = path.basename(page);
      expect({
        page,
        inDocsIndex: index.includes(`](${name})`),
        inReadme: readme.includes(`](${page})`),
      }).toEqual({
        page,
        inDocsIndex: true,
        inReadme: true,
      });
    }
  });

  it.each(pages)('%s links only to files and headings inside the repository', (page) => {
    const text = read(page).replace(/```[\s\S]*?```/g, '');
    for (const [, target] of text.matchAll(/\]\(([^)\s]+)\)/g)) {
      if (/^[a-z]+:/.test(target!)) continue; // http(s), mailto: outside links are fine
      const [file, anchor] = target!.split('#');
      const resolved = file ? path.relative(ROOT, path.resolve(ROOT, path.dirname(page), file)) : page;
      const inside = !resolved.startsWith('..') && !path.isAbsolute(resolved);
      const exists = inside && existsSync(path.join(ROOT, resolved));
      const anchored =
        !anchor || (exists && resolved.endsWith('.md') && anchorsOf(read(resolved)).has(anchor));
      expect({ page, target, inside, exists, anchored }).toEqual({
        page,
        target,
        inside,
        exists: true,
        anchored: true,
      });
    }
  });
});
