import fc from 'fast-check';
import { topLevelMemberSource } from '../../src/api/json-source';

describe('topLevelMemberSource', () => {
  it.each([
    ['{"amount_brl":10.0000000000000001}', '10.0000000000000001'],
    ['{"amount_brl": 1e-7 }', '1e-7'],
    ['\uFEFF { "a" : [1, {"amount_brl": 2}], "amount_brl" : -0.50E+2 }', '-0.50E+2'],
    ['{"amount_brl":1,"amount_brl":10.001}', '10.001'],
    ['{"amount\\u005fbrl":10.001}', '10.001'],
    ['{"x":"\\"amount_brl\\":1","amount_brl":"10"}', '"10"'],
    ['{"nested":{"amount_brl":1}}', undefined],
    ['{}', undefined],
    ['[{"amount_brl":1}]', undefined],
    ['10.001', undefined],
  ])('%s -> %p', (json, expected) => {
    JSON.parse(json.replace(/^\uFEFF/, '')); // the precondition: a text the body parser accepts (it drops a BOM)
    expect(topLevelMemberSource(json, 'amount_brl')).toBe(expected);
  });

  it('finds the text of the member JSON.parse reads, in any valid object with any spacing', () => {
    const spacing = fc.constantFrom('', ' ', '\n  ', '\t');
    fc.assert(
      fc.property(
        fc.dictionary(fc.string(), fc.jsonValue()),
        fc.string(),
        fc.jsonValue(),
        fc.nat(),
        spacing,
        (others, name, value, position, space) => {
          const entries = Object.entries(others).filter(([key]) => key !== name && key !== '__proto__');
          entries.splice(position % (entries.length + 1), 0, [name, value]);
          const member = ([key, v]: [string, unknown]) =>
            `${space}${JSON.stringify(key)}${space}:${space}${JSON.stringify(v, null, space ? 1 : 0)}${space}`;
          const json = `${space}{${entries.map(member).join(',')}}${space}`;
          const parsed = JSON.parse(json) as Record<string, unknown>;
          const source = topLevelMemberSource(json, name);
          expect(source).toBeDefined();
          expect(JSON.parse(source!)).toEqual(parsed[name]);
        },
      ),
      { numRuns: 500 },
    );
  });
});
