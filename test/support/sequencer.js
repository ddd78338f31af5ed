const Sequencer = require('@jest/test-sequencer').default;

/**
 * Jest's own order (failed first, then slowest first by the durations in its cache), except where it
 * has no durations (a fresh clone, as in CI): it then orders by file size, which puts long unit files
 * ahead of the suites that wait on real servers for a minute or more. Those are started first here,
 * by directory, so that the two workers do not end the run with one of them alone on a long suite.
 */
const FIRST = ['test/faults/', 'test/e2e/', 'test/build/', 'test/infra/'];

class SlowSuitesFirst extends Sequencer {
  sort(tests) {
    const ordered = super.sort(tests);
    if (ordered.every((t) => t.duration != null)) return ordered;
    const rank = (t) => {
      const rel = t.path
        .slice(t.context.config.rootDir.length + 1)
        .split('\\')
        .join('/');
      const i = FIRST.findIndex((dir) => rel.startsWith(dir));
      return i === -1 ? FIRST.length : i;
    };
    // Stable: within a rank, jest's order stands.
    return [...ordered].sort((a, b) => rank(a) - rank(b));
  }
}

module.exports = SlowSuitesFirst;
