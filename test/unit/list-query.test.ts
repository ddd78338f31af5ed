import fc from 'fast-check';
import { listPayoutsQuerySchema, TIMESTAMP_PATTERN } from '../../src/api/payouts/list.schemas';

// The document's pattern for created_at[gte] and created_at[lt] says exactly what the server takes:
// every text it matches is accepted, and every text the server accepts matches it.
describe('created_at filter pattern', () => {
  const pattern = new RegExp(TIMESTAMP_PATTERN);
  const accepted = (text: string) => listPayoutsQuerySchema.safeParse({ 'created_at[gte]': text }).success;

  it('every text the pattern matches is accepted', () => {
    fc.assert(
      fc.property(fc.stringMatching(pattern), (text) => expect(accepted(text)).toBe(true)),
      {
        numRuns: 5000,
      },
    );
  });

  it('hands the database a UTC instant within years 1-9999, which PostgreSQL always reads', () => {
    fc.assert(
      fc.property(fc.stringMatching(pattern), (text) => {
        const parsed = listPayoutsQuerySchema.parse({ 'created_at[gte]': text })['created_at[gte]']!;
        expect(parsed).toMatch(/^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\.[0-9]{3,}Z$/);
        expect(parsed >= '0001').toBe(true);
      }),
      { numRuns: 5000 },
    );
    expect(listPayoutsQuerySchema.parse({ 'created_at[lt]': '2026-01-31T00:00:00.1234567+23:59' })).toEqual({
      'created_at[lt]': '2026-01-30T00:01:00.1234567Z',
    });
  });

  it('texts near the rule are accepted exactly when they match', () => {
    const near = fc
      .tuple(
        fc.integer({ min: 0, max: 9999 }),
        fc.integer({ min: 0, max: 13 }),
        fc.integer({ min: 0, max: 32 }),
        fc.integer({ min: 0, max: 24 }),
        fc.integer({ min: 0, max: 60 }),
        fc.constantFrom('Z', 'z', '+03:00', '-24:00', ' 03:00', '+0300', '', '.5Z'),
      )
      .map(([y, mo, d, h, mi, zone]) => {
        const two = (n: number) => String(n).padStart(2, '0');
        return `${String(y).padStart(4, '0')}-${two(mo)}-${two(d)}T${two(h)}:${two(mi)}:00${zone}`;
      });
    const other = fc.oneof(near, fc.stringMatching(/^[0-9]{0,13}$/), fc.string({ maxLength: 30 }));
    fc.assert(
      fc.property(other, (text) => expect(accepted(text)).toBe(pattern.test(text))),
      { numRuns: 5000 },
    );
    expect(pattern.test('')).toBe(false);
    expect(pattern.test('2024-02-29T00:00:00Z')).toBe(true);
    expect(pattern.test('2100-02-29T00:00:00Z')).toBe(false);
  });
});
