/**
 * How `npm start` shows its processes' logs. The services log JSON (pino), one object per line,
 * which is what log collectors want; a person at a terminal wants one short coloured line per event.
 * So: pretty in a TTY, the JSON untouched otherwise (and the launcher's own messages as JSON too).
 */

const LEVELS: Record<number, { name: string; colour: string }> = {
  10: { name: 'TRACE', colour: '\x1b[90m' },
  20: { name: 'DEBUG', colour: '\x1b[36m' },
  30: { name: 'INFO', colour: '\x1b[32m' },
  40: { name: 'WARN', colour: '\x1b[33m' },
  50: { name: 'ERROR', colour: '\x1b[31m' },
  60: { name: 'FATAL', colour: '\x1b[35m' },
};
const DIM = '\x1b[2m';
const RESET = '\x1b[0m';
// pino's envelope: shown as the line's time, level and source rather than as fields.
const ENVELOPE = new Set(['level', 'time', 'pid', 'hostname', 'msg', 'name', 'service']);

export interface LineFormatter {
  /** One output line of the process `source` (JSON or plain text). */
  child(source: string, line: string): string;
  /** A message of the launcher itself. */
  launcher(message: string, level?: 'info' | 'warn' | 'error'): string;
}

export function createLineFormatter(opts: { pretty: boolean; colour: boolean }): LineFormatter {
  const paint = (code: string, text: string) => (opts.colour ? `${code}${text}${RESET}` : text);
  const time = (t: unknown) => {
    const d = typeof t === 'number' || typeof t === 'string' ? new Date(t) : new Date();
    return Number.isNaN(d.getTime()) ? new Date().toISOString().slice(11, 23) : d.toISOString().slice(11, 23);
  };
  const pretty = (
    source: string,
    level: number,
    t: unknown,
    msg: string,
    fields: Record<string, unknown>,
  ) => {
    const lvl = LEVELS[level] ?? LEVELS[30]!;
    const extras = Object.entries(fields)
      .filter(([k]) => !ENVELOPE.has(k))
      .map(([k, v]) => `${k}=${typeof v === 'string' ? v : JSON.stringify(v)}`)
      .join(' ');
    return [
      paint(DIM, time(t)),
      paint(lvl.colour, lvl.name.padEnd(5)),
      paint('\x1b[1m', `[${source}]`),
      msg,
      extras ? paint(DIM, extras) : '',
    ]
      .filter(Boolean)
      .join(' ');
  };

  return {
    child(source, line) {
      let parsed: Record<string, unknown> | undefined;
      if (line.startsWith('{')) {
        try {
          parsed = JSON.parse(line) as Record<string, unknown>;
        } catch {
          parsed = undefined;
        }
      }
      if (!opts.pretty) {
        // JSON stays JSON (with its source added); plain text becomes a JSON line, so the stream is uniform.
        return JSON.stringify(
          parsed ? { source, ...parsed } : { level: 30, time: Date.now(), source, msg: line },
        );
      }
      if (!parsed) return pretty(source, 30, undefined, line, {});
      const level = typeof parsed.level === 'number' ? parsed.level : 30;
      return pretty(source, level, parsed.time, String(parsed.msg ?? ''), parsed);
    },
    launcher(message, level = 'info') {
      const numeric = level === 'error' ? 50 : level === 'warn' ? 40 : 30;
      if (!opts.pretty)
        return JSON.stringify({ level: numeric, time: Date.now(), source: 'local', msg: message });
      return pretty('local', numeric, undefined, message, {});
    },
  };
}
