import { createLineFormatter } from '../../dev/local/log-format';

const json = JSON.stringify({
  level: 40,
  time: Date.parse('2026-01-01T12:34:56.789Z'),
  pid: 1,
  hostname: 'h',
  name: 'payout-api',
  msg: 'payout refused',
  payoutId: 'p1',
  reason: { code: 'x' },
});

describe('npm start log lines', () => {
  it('are one short line per event in a terminal: time, level, source, message, fields', () => {
    const f = createLineFormatter({ pretty: true, colour: false });
    expect(f.child('api', json)).toBe(
      '12:34:56.789 WARN  [api] payout refused payoutId=p1 reason={"code":"x"}',
    );
    expect(f.child('sandbox', 'plain text')).toMatch(
      /^\d\d:\d\d:\d\d\.\d{3} INFO {2}\[sandbox\] plain text$/,
    );
    expect(f.launcher('api exited', 'error')).toMatch(/ERROR \[local\] api exited$/);
  });

  it('are coloured only when asked (a colour terminal)', () => {
    expect(createLineFormatter({ pretty: true, colour: true }).child('api', json)).toContain('\x1b[33mWARN');
    expect(createLineFormatter({ pretty: true, colour: false }).child('api', json)).not.toContain('\x1b[');
  });

  it('stay JSON otherwise, one object per line, with the source added', () => {
    const f = createLineFormatter({ pretty: false, colour: false });
    expect(JSON.parse(f.child('api', json))).toMatchObject({
      source: 'api',
      msg: 'payout refused',
      level: 40,
    });
    expect(JSON.parse(f.child('temporal', 'plain'))).toMatchObject({
      source: 'temporal',
      msg: 'plain',
      level: 30,
    });
    expect(JSON.parse(f.launcher('stopping'))).toMatchObject({ source: 'local', msg: 'stopping', level: 30 });
  });
});
