import fc from 'fast-check';
import { repeatedMemberName, topLevelMemberSource } from '../../src/api/json-source';

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

describe('repeatedMemberName', () => {
  it.each([
    ['{"a":1,"a":2}', 'a'],
    ['{"a":1,"b":{"c":1,"c":2}}', 'c'],
    ['{"amount_brl":1,"amount\\u005fbrl":2}', 'amount_brl'],
    ['[{"a":1},{"a":2}]', undefined],
    ['{"a":{"a":1},"b":[{"a":1}]}', undefined],
    ['{"a":"a","b":["a","a"]}', undefined],
    ['{"x":"\\"a\\":1,\\"a\\":2"}', undefined],
    ['{"a":[1,{"b":1}],"b":2}', undefined],
    ['{}', undefined],
    ['"a"', undefined],
  ])('%s -> %p', (json, expected) => {
    JSON.parse(json);
    expect(repeatedMemberName(json)).toBe(expected);
  });

  it('finds a repeat exactly when the parsed objects hold fewer members than the text names', () => {
    const object = fc.dictionary(fc.constantFrom('a', 'b', 'é', '"'), fc.jsonValue({ maxDepth: 2 }));
    fc.assert(
      fc.property(
        fc.array(fc.tuple(fc.constantFrom('a', 'b', 'é', '"'), fc.jsonValue({ maxDepth: 2 })), {
          maxLength: 4,
        }),
        object,
        (members, inner) => {
          const text = `{${[...members, ['in', inner] as const].map(([k, v]) => `${JSON.stringify(k)}:${JSON.stringify(v)}`).join(',')}}`;
          const names = members.map(([k]) => k);
          const repeated = names.find((name, i) => names.indexOf(name) !== i);
          expect(repeatedMemberName(text)).toBe(repeated);
        },
      ),
    );
  });
});
